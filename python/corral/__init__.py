"""Corral's Python client: submit jobs to a Corral cluster, follow them, read their output.

    import corral
    client = corral.Client()            # finds the head as the corral CLI does
    job = client.submit("python3 train.py", gpus=2, name="train")
    for chunk in job.logs(follow=True):
        print(chunk, end="")
    print(job.wait())                   # JobState.SUCCEEDED
"""

from .client import ClusterPoint, Client, ExecResult, Job, JobState, UsagePoint
from .executor import CorralFuture, Executor, FailedJobError
from .errors import (AuthError, Conflict, CorralError, InvalidArgument, NotFound, QuotaExceeded,
                     ServerError, Unavailable)

__all__ = ["Client", "Job", "JobState", "ExecResult", "UsagePoint", "ClusterPoint", "Executor", "CorralFuture", "FailedJobError", "CorralError", "InvalidArgument", "AuthError", "NotFound",
           "Conflict", "QuotaExceeded", "Unavailable", "ServerError"]
