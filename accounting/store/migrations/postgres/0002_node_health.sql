-- The health history: each node's partition (for per-partition availability) and every
-- validation run of a node (idle or after a repair) with its result.
ALTER TABLE nodes ADD COLUMN partition_name TEXT NOT NULL DEFAULT '';

CREATE TABLE node_validations (
    node        TEXT    NOT NULL,
    start_time  BIGINT  NOT NULL,
    end_time    BIGINT  NOT NULL DEFAULT 0,
    partition_name TEXT    NOT NULL DEFAULT '',
    kind        TEXT    NOT NULL DEFAULT '',
    result      TEXT    NOT NULL DEFAULT '',
    detail      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (node, start_time)
);
