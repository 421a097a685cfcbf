"""Background jobs from the command line (``job start|status|cancel|log KIND NAME``): the one
API call the app and a notebook use (``api.Store.job``), for every kind of the registry
(``api.jobs.JOB_KINDS``: ``run``, ``tuning``, ``explanation``). ``start`` hands the job to a
worker process of its own (``python -m compassess_core.worker``) and returns at once; the job
goes on after the command ends."""

from __future__ import annotations

import json

from .. import api
from ..api.jobs import JOB_KINDS
from ..worker import EXIT_OK


def _job(args) -> api.Job:
    given = {p.name: getattr(args, p.name, None) for kind in JOB_KINDS.values()
             for p in kind.params}
    params = {name: value for name, value in given.items() if value is not None}
    return api.open_store(args.db).job(args.kind, list(args.name), **params)


def cmd_job(args) -> int:
    job = _job(args)
    if args.job_command == "start":
        process = job.start()
        print(f"started {job.name}: worker process {process.pid}; its log: {job.log_path}")
    elif args.job_command == "status":
        status = job.status()
        if args.json:
            print(json.dumps(dict(kind=status.kind, name=status.name, state=status.state,
                                  done=status.done, total=status.total, unit=status.unit,
                                  message=status.message, can_resume=status.can_resume),
                             indent=2))
        else:
            print(status.line)
    elif args.job_command == "cancel":
        job.cancel()
        print(f"asked {job.name} to stop; `compassess job start` resumes it")
    else:
        print(job.log(args.lines))
    return EXIT_OK
