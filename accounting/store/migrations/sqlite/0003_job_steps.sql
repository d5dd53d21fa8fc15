-- Job steps (sacct's JOBID.batch and JOBID.N): the batch script and each srun,
-- as the batch host reported them when the job's pod ended.
CREATE TABLE job_steps (
    job_id      BIGINT  NOT NULL,
    step_id     TEXT    NOT NULL,
    name        TEXT    NOT NULL DEFAULT '',
    state       TEXT    NOT NULL,
    exit_code   INTEGER NOT NULL DEFAULT 0,
    exit_signal INTEGER NOT NULL DEFAULT 0,
    start_time  BIGINT  NOT NULL DEFAULT 0,
    end_time    BIGINT  NOT NULL DEFAULT 0,
    tasks       BIGINT  NOT NULL DEFAULT 0,
    node_list   TEXT    NOT NULL DEFAULT '',
    tres_cpu    BIGINT  NOT NULL DEFAULT 0,
    tres_gpus   DOUBLE PRECISION NOT NULL DEFAULT 0,
    tres_nodes  BIGINT  NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, step_id)
);
