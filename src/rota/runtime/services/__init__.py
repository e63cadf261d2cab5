"""The synchronous services the application calls, each on the caller's thread: readiness (the
database reached, migrated, on the time line), queueing, control of jobs and queues, schedules,
results, status, and the inspection the CLI and dashboard read through; ``actors`` names who
changed a schedule, for its history."""
