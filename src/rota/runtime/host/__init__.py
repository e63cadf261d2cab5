"""The process host: it starts and stops a process's worker and scheduler (``process``), runs
them until a signal (``signals``), drains due jobs in the calling process (``drain``), and
supervises several worker processes (``supervisor``); ``wakeups`` lets its worker and scheduler
see at once what this process queued, resumed or changed."""
