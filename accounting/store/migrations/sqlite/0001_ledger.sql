-- The ledger: jobs, their state history, run intervals, nodes and down time.
-- Times are Unix seconds; 0 means unset. GPUs are fractional (REAL).
CREATE TABLE jobs (
    job_id          INTEGER PRIMARY KEY,
    array_job_id    INTEGER NOT NULL DEFAULT 0,
    array_task_id   INTEGER NOT NULL DEFAULT -1,
    name            TEXT    NOT NULL DEFAULT '',
    user_name       TEXT    NOT NULL,
    account         TEXT    NOT NULL,
    partition_name  TEXT    NOT NULL DEFAULT '',
    qos             TEXT    NOT NULL DEFAULT '',
    origin          TEXT    NOT NULL,
    namespace       TEXT    NOT NULL DEFAULT '',
    podgroup        TEXT    NOT NULL DEFAULT '',
    submit_time     INTEGER NOT NULL DEFAULT 0,
    eligible_time   INTEGER NOT NULL DEFAULT 0,
    start_time      INTEGER NOT NULL DEFAULT 0,
    end_time        INTEGER NOT NULL DEFAULT 0,
    state           TEXT    NOT NULL,
    exit_code       INTEGER NOT NULL DEFAULT 0,
    exit_signal     INTEGER NOT NULL DEFAULT 0,
    req_cpus        INTEGER NOT NULL DEFAULT 0,
    req_mem_mb      INTEGER NOT NULL DEFAULT 0,
    req_gpus        REAL    NOT NULL DEFAULT 0,
    req_gpu_mem_mb  INTEGER NOT NULL DEFAULT 0,
    req_nodes       INTEGER NOT NULL DEFAULT 0,
    alloc_cpus      INTEGER NOT NULL DEFAULT 0,
    alloc_mem_mb    INTEGER NOT NULL DEFAULT 0,
    alloc_gpus      REAL    NOT NULL DEFAULT 0,
    alloc_gpu_mem_mb INTEGER NOT NULL DEFAULT 0,
    alloc_nodes     INTEGER NOT NULL DEFAULT 0,
    node_list       TEXT    NOT NULL DEFAULT '',
    requeue_count   INTEGER NOT NULL DEFAULT 0
);
-- sacct filters by account or user and a window; the index covers the window
-- test so only matching rows are read from the table.
CREATE INDEX jobs_account_window ON jobs (account, submit_time, end_time);
CREATE INDEX jobs_user_window ON jobs (user_name, submit_time, end_time);
CREATE INDEX jobs_window ON jobs (submit_time, end_time);

CREATE TABLE job_transitions (
    job_id  INTEGER NOT NULL,
    at      INTEGER NOT NULL,
    state   TEXT    NOT NULL,
    reason  TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (job_id, at, state)
);

CREATE TABLE job_runs (
    job_id     INTEGER NOT NULL,
    start_time INTEGER NOT NULL,
    end_time   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, start_time)
);
CREATE INDEX job_runs_end ON job_runs (end_time);

CREATE TABLE nodes (
    name        TEXT PRIMARY KEY,
    cpus        INTEGER NOT NULL DEFAULT 0,
    mem_mb      INTEGER NOT NULL DEFAULT 0,
    gpus        REAL    NOT NULL DEFAULT 0,
    gpu_mem_mb  INTEGER NOT NULL DEFAULT 0,
    added       INTEGER NOT NULL,
    removed     INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE node_downs (
    node        TEXT    NOT NULL,
    start_time  INTEGER NOT NULL,
    end_time    INTEGER NOT NULL DEFAULT 0,
    reason      TEXT    NOT NULL DEFAULT '',
    cpus        INTEGER NOT NULL DEFAULT 0,
    mem_mb      INTEGER NOT NULL DEFAULT 0,
    gpus        REAL    NOT NULL DEFAULT 0,
    gpu_mem_mb  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (node, start_time)
);
