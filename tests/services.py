"""Starting a test's outside service (a SLURM cluster, a browser) or skipping, saying why."""
import contextlib
import os

import pytest


@contextlib.contextmanager
def started(service, unavailable: type[Exception], require_env: str, what: str):
    """``service`` started (``start()``), then stopped after the block. If it cannot start
    (raises ``unavailable``) the test is skipped with the reason, or fails when the
    environment variable ``require_env`` is set (CI sets it, so nothing skips there)."""
    try:
        service.start()
    except unavailable as err:
        if os.environ.get(require_env):
            pytest.fail(f"{require_env} is set but {what} did not start: {err}")
        pytest.skip(f"no {what}: {err}")
    try:
        yield service
    finally:
        service.stop()
