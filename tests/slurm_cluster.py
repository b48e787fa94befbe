"""A one-node SLURM cluster on localhost, for the SLURM end-to-end test.

``LocalCluster(folder).start()`` runs a private munged, slurmctld and slurmd as root, in
the foreground, with every file they write (key, sockets, state, spool, logs, pid files)
inside ``folder`` (its own munge key too: /etc/munge is not used); ``stop()`` cancels the
cluster's jobs and ends exactly those three processes, by PID. Clients run with
``cluster.env`` find the cluster through ``SLURM_CONF`` and through wrappers of the client
commands that set it, so the machine's own SLURM configuration, if any, is neither read
nor touched.

The cluster has one node (this host, at 127.0.0.1) with the CPUs and memory ``slurmd -C``
detects, and one default partition whose cores may each be shared by up to 8 jobs, so
a 2-core machine runs several small jobs at once as long as their memory requests fit.
There is no accounting database: job status comes from ``squeue`` only.

Needs Debian's ``slurm-wlm`` and ``munge`` (``apt-get install slurm-wlm munge``) and
root, since slurmd starts every job as root here. ``ClusterUnavailable`` says what is
missing.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scancel", "srun")
NODE_KEYS = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore",
             "RealMemory")


class ClusterUnavailable(RuntimeError):
    """The cluster cannot be started on this machine (the message says why)."""


def _end_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it dies, so a
    killed test run leaves no daemons behind (Linux; elsewhere a no-op)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def missing_requirements() -> str | None:
    """Why the cluster cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return "the local SLURM cluster runs its daemons as root; not root"
    missing = [name for name in DAEMONS + CLIENTS if shutil.which(name) is None]
    if missing:
        return (f"{', '.join(missing)} not found: install Debian's slurm-wlm and munge "
                "(apt-get install slurm-wlm munge)")
    return None


def detected_node() -> dict[str, str]:
    """CPUs, sockets, cores, threads and memory of this host as slurmd detects them."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise ClusterUnavailable(f"slurmd -C failed: {out.stderr.strip()}")
    fields = dict(item.split("=", 1) for item in out.stdout.split() if "=" in item)
    node = {key: fields[key] for key in NODE_KEYS if key in fields}
    if "CPUs" not in node or "RealMemory" not in node:
        raise ClusterUnavailable(f"slurmd -C printed no CPUs or memory: {out.stdout!r}")
    return node


class LocalCluster:
    """munged + slurmctld + slurmd for this host, everything under ``root``."""

    def __init__(self, root: Path, partition: str = "localtest"):
        self.root = Path(root)
        self.partition = partition
        self.node = socket.gethostname().split(".")[0]
        self.conf = self.root / "slurm.conf"
        self.munge_socket = self.root / "munge" / "munge.socket"
        self.logs = self.root / "log"
        self.bin = self.root / "bin"
        self.processes: dict[str, subprocess.Popen] = {}

    @property
    def env(self) -> dict[str, str]:
        """The calling environment with the SLURM clients pointed at this cluster."""
        env = dict(os.environ, SLURM_CONF=str(self.conf))
        for name in list(env):  # stale settings of an enclosing allocation
            if name.startswith(("SLURM_", "SBATCH_", "SRUN_")) and name != "SLURM_CONF":
                del env[name]
        env["PATH"] = os.pathsep.join([str(self.bin), env.get("PATH", "")])
        return env

    def __enter__(self) -> "LocalCluster":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ start

    def start(self, timeout: float = 60) -> None:
        reason = missing_requirements()
        if reason:
            raise ClusterUnavailable(reason)
        try:
            self._write_files()
            self._start_munged(timeout)
            self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
            self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", self.node])
            self._wait_for_idle_node(timeout)
        except BaseException:
            self.stop()
            raise

    def _write_files(self) -> None:
        for sub in ("state", "spool", "log", "run", "munge", "bin"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # Client wrappers, first on PATH in `env`: the SLURM executor plugin removes
        # SLURM_CONF from the environment of the srun it starts inside each job, and srun
        # would then look for /etc/slurm/slurm.conf (another cluster's, or none).
        for name in CLIENTS:
            wrapper = self.bin / name
            wrapper.write_text(f'#!/bin/sh\nSLURM_CONF="{self.conf}" '
                               f'exec "{shutil.which(name)}" "$@"\n')
            wrapper.chmod(0o755)
        # munged refuses a socket folder others can write to; 0711 lets clients reach it.
        (self.root / "munge").chmod(0o711)
        key = self.root / "munge" / "munge.key"
        # A private key, read only by this cluster's munged: nothing in /etc/munge is used.
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(1024))
        node = " ".join(f"{k}={v}" for k, v in detected_node().items())
        run, log = self.root / "run", self.logs
        self.conf.write_text("\n".join([
            "ClusterName=localtest",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={self.root / 'state'}",
            f"SlurmdSpoolDir={self.root / 'spool'}",
            f"SlurmctldPidFile={run / 'slurmctld.pid'}",
            f"SlurmdPidFile={run / 'slurmd.pid'}",
            f"SlurmctldLogFile={log / 'slurmctld.log'}",
            f"SlurmdLogFile={log / 'slurmd.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "MailProg=/bin/true",
            "SwitchType=switch/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "ReturnToService=2",
            # Finished jobs stay visible to squeue for 5 minutes (status without sacct).
            "MinJobAge=300",
            f"NodeName={self.node} NodeAddr=127.0.0.1 {node} State=UNKNOWN",
            # Up to 8 jobs share each core, so a 2-core test machine runs several small
            # jobs at once; memory requests still have to fit.
            f"PartitionName={self.partition} Nodes={self.node} Default=YES "
            "MaxTime=INFINITE State=UP OverSubscribe=FORCE:8",
            "",
        ]))

    def _spawn(self, name: str, command: list[str]) -> None:
        out = open(self.logs / f"{name}.out", "wb")
        try:
            self.processes[name] = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.env, start_new_session=True, preexec_fn=_end_with_parent)
        finally:
            out.close()

    def _start_munged(self, timeout: float) -> None:
        munge = self.root / "munge"
        self._spawn("munged", [
            "munged", "--foreground", "--force", f"--socket={self.munge_socket}",
            f"--key-file={munge / 'munge.key'}", f"--pid-file={munge / 'munged.pid'}",
            f"--log-file={self.logs / 'munged.log'}", f"--seed-file={munge / 'munged.seed'}",
        ])
        deadline = time.monotonic() + timeout
        while not self.munge_socket.exists():
            self._check_alive()
            if time.monotonic() > deadline:
                raise ClusterUnavailable("munged did not create its socket:\n"
                                         + _tail(self.logs / "munged.log"))
            time.sleep(0.05)

    def _check_alive(self) -> None:
        for name, proc in self.processes.items():
            if proc.poll() is not None:
                raise ClusterUnavailable(
                    f"{name} exited with status {proc.returncode}:\n"
                    + _tail(self.logs / f"{name}.out") + _tail(self.logs / f"{name}.log"))

    def _wait_for_idle_node(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        state = ""
        while True:
            self._check_alive()
            out = subprocess.run(["sinfo", "-h", "-N", "-n", self.node, "-o", "%T"],
                                 capture_output=True, text=True, env=self.env, timeout=30)
            state = out.stdout.strip()
            if out.returncode == 0 and state == "idle":
                return
            if time.monotonic() > deadline:
                raise ClusterUnavailable(
                    f"node {self.node} not idle after {timeout:.0f} s (state {state!r}, "
                    f"sinfo: {out.stderr.strip()!r}):\n"
                    + _tail(self.logs / "slurmctld.log") + _tail(self.logs / "slurmd.log"))
            time.sleep(0.2)

    # ------------------------------------------------------------------- stop

    def stop(self) -> None:
        """Cancel this cluster's jobs, then end its daemons (slurmd first), by PID."""
        if self.processes.get("slurmctld") and self.processes["slurmctld"].poll() is None:
            self._cancel_jobs()
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.processes.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)

    def _cancel_jobs(self, timeout: float = 30) -> None:
        """Cancel every job of the partition and wait until slurmd has ended them."""
        def run(*args):
            return subprocess.run(args, env=self.env, capture_output=True, text=True,
                                  timeout=30)

        run("scancel", "--full", "--partition", self.partition)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            active = run("squeue", "-h", "-p", self.partition, "-o", "%i", "-t",
                         "PENDING,RUNNING,COMPLETING,CONFIGURING,SUSPENDED")
            if active.returncode != 0 or not active.stdout.strip():
                return
            time.sleep(0.5)

    def log_tails(self) -> str:
        """The end of every daemon log, for a failure message."""
        return "\n".join(f"--- {path.name}\n{_tail(path)}"
                         for path in sorted(self.logs.glob("*")) if path.is_file())
