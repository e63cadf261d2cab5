INSERT INTO rota_dependencies (job_id, depends_on, until_final) VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE job_id = rota_dependencies.job_id;

INSERT INTO rota_jobs (namespace, task, queue, priority, state, payload, attempt, max_attempts, run_at, created_at, cancel_requested, schedule, scheduled_at, tick, unique_key, concurrency_key, rate_key, has_dependencies, batch_id, meta, error_code, unique_for, replay_of) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON DUPLICATE KEY UPDATE id = rota_jobs.id;

INSERT INTO rota_leases (namespace, name, owner, until) VALUES (%s, %s, %s, %s) ON DUPLICATE KEY UPDATE namespace = rota_leases.namespace;

INSERT INTO rota_limits (namespace, `key`, tokens, updated_at) VALUES (%s, %s, %s, %s) ON DUPLICATE KEY UPDATE namespace = rota_limits.namespace;

INSERT INTO rota_queues (namespace, name, paused, updated_at) VALUES (%s, %s, %s, %s) ON DUPLICATE KEY UPDATE namespace = rota_queues.namespace;

INSERT INTO rota_task_sets (set_key, task) VALUES (%s, %s) ON DUPLICATE KEY UPDATE set_key = rota_task_sets.set_key;
