-- Advance reservations: the reservation each job ran in, and each reservation's windows
-- with what they held, for sreport's reservation and cluster utilization reports.
ALTER TABLE jobs ADD COLUMN reservation TEXT NOT NULL DEFAULT '';

CREATE TABLE reservations (
    name        TEXT    NOT NULL,
    start_time  BIGINT  NOT NULL,
    end_time    BIGINT  NOT NULL,
    nodes       TEXT    NOT NULL DEFAULT '',
    flags       TEXT    NOT NULL DEFAULT '',
    accounts    TEXT    NOT NULL DEFAULT '',
    users       TEXT    NOT NULL DEFAULT '',
    cpus        BIGINT  NOT NULL DEFAULT 0,
    mem_mb      BIGINT  NOT NULL DEFAULT 0,
    gpus        DOUBLE PRECISION NOT NULL DEFAULT 0,
    gpu_mem_mb  BIGINT  NOT NULL DEFAULT 0,
    node_count  BIGINT  NOT NULL DEFAULT 0,
    PRIMARY KEY (name, start_time)
);
