"""The jobs a service had planned to run on Sidequest.js, on rota: a job class's ``run`` as a
task (``this.fail``, ``this.snooze`` and a returned value as ``Fail``, ``Snooze`` and a
result), the builder's options as task options, two queues with their own concurrency, and a
daily schedule in New York time that runs once per day however many processes run it.

The mailer and the users are stand-ins: each records what it was asked to do, so that a test
sees what ran.
"""

from __future__ import annotations

from datetime import datetime

from rota import Fail, JobContext, Rota, Snooze

# queues: [{ name: "default", concurrency: 10 }, { name: "mail", concurrency: 2 }]
rota = Rota(queues={"default": 10, "mail": 2})

USERS = {42: "ada@example.com"}
sent: list[str] = []
digests: list[datetime | None] = []


class Mailer:
    """Stands in for the mail provider; a test makes it busy or failing."""

    busy = False

    def send(self, to: str) -> None:
        sent.append(to)


mailer = Mailer()


# Sidequest.build(SendWelcomeEmail).queue("mail").maxAttempts(5).retryDelay(2000)
#   .backoffStrategy("exponential").timeout(30_000).unique({ withArgs: true })
@rota.task(queue="mail", retries=4, retry_delay=2, timeout=30, unique=True)
async def send_welcome_email(ctx: JobContext, user_id: int) -> dict[str, str]:
    to = USERS.get(user_id)
    if to is None:
        raise Fail(f"no user {user_id}")  # return this.fail(...)
    if mailer.busy:
        raise Snooze(60)  # return this.snooze(60_000)
    mailer.send(to)
    return {"sent": to}  # the job's result


# Sidequest.build(DailyDigest).queue("mail").unique({ period: "day" })
#   .scheduleOptions({ timezone: "America/New_York" }).schedule("0 7 * * *")
@rota.task(cron="0 7 * * *", tz="America/New_York", queue="mail")
def daily_digest(ctx: JobContext) -> None:
    digests.append(ctx.scheduled_at)
