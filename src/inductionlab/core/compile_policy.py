"""When the training step is compiled (torch.compile) and how: the ``compile`` setting, the
number of steps and the device decide; one process compiles at a time per cache
(:func:`compile_lock`)."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time

import torch

from .causal_attention import inductor_cache_dir, source_tag
from .metrics import mean_loss
from .spec import Spec


COMPILE_MIN_STEPS = 2000


def should_compile(setting: str, steps: int, device: torch.device) -> bool:
    """``train.compile``: always, never, or auto (on a CPU, for runs long enough to pay)."""
    if setting == "auto":
        return device.type == "cpu" and steps >= COMPILE_MIN_STEPS
    return setting == "always"


def loss_function(model, compiled: bool, log):
    """tokens -> mean training loss of ``model``, compiled with torch.compile if asked.

    Compiling needs a C++ compiler; if the first compiled call fails, the eager
    function is used instead (and said so in the log). The first call's time, compiling
    included, is logged by :func:`compile_lock`.
    """
    def eager(tokens):
        return mean_loss(model(tokens), tokens)

    if not compiled:
        return eager
    tag_cache_keys()
    settle_vector_isa()
    compiled_fn = torch.compile(eager)
    state = {"fn": None}

    def first_call_decides(tokens):
        if state["fn"] is None:
            try:
                loss = compiled_fn(tokens)
                state["fn"] = compiled_fn
                return loss
            except Exception as err:  # noqa: BLE001 - any compiler failure means eager
                log(f"torch.compile failed ({type(err).__name__}: {str(err)[:200]}); training eagerly")
                state["fn"] = eager
        return state["fn"](tokens)

    return first_call_decides


TAG_PREFIX = "inductionlab-operators-"


def tag_cache_keys() -> str:
    """Key inductor's caches of compiled graphs by the project's operators' source too
    (:func:`.causal_attention.source_tag`), beside any tag of the user's
    (``TORCH_COMPILE_CACHE_KEY_TAG``). Returns the tag set."""
    config = torch.compiler.config
    theirs = [part for part in config.cache_key_tag.split(",") if part and not part.startswith(TAG_PREFIX)]
    config.cache_key_tag = ",".join(theirs + [TAG_PREFIX + source_tag()])
    return config.cache_key_tag


def _isa_marker():
    """Where a machine's passed probe of inductor's vector instruction sets is recorded: one
    file per torch, C++ compiler and CPU (what the probe's outcome depends on)."""
    from torch._inductor.cpp_builder import get_compiler_version_info, get_cpp_compiler

    from .causal_attention import cache_dir, machine

    compiler = get_cpp_compiler()
    key = "\n".join([str(torch.__version__), compiler, get_compiler_version_info(compiler), machine()])
    return cache_dir() / f"vector-isa-{hashlib.sha256(key.encode()).hexdigest()[:16]}.ok"


def settle_vector_isa() -> bool:
    """Spare every compiling process inductor's probe of the vector instruction sets.

    Before it compiles, inductor checks each instruction set the CPU's flags name (AVX2,
    AVX-512) by building a test library and loading it in a fresh interpreter, in every
    process: about 1.6 CPU s of a training job whose graphs all come from the cache. The
    outcome depends only on torch, the compiler and the CPU. The first process here runs
    the probe as inductor does; when every named set passes, a marker in the cache says
    so, and this and every later process tell inductor to take the CPU's flags as they
    are (``cpp.vec_isa_ok``), which picks the same instruction set and so the same code.
    Where a set fails, or on another architecture, inductor probes as before; a user's
    own ``TORCHINDUCTOR_VEC_ISA_OK`` is left alone. Returns whether the flags are taken."""
    import platform

    from torch._inductor import config, cpu_vec_isa

    if config.cpp.vec_isa_ok is not None or platform.machine() not in ("x86_64", "AMD64"):
        return False
    marker = _isa_marker()
    if not marker.exists():
        probed = [str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()]
        cpu_vec_isa.valid_vec_isa_list.cache_clear()
        with config.patch({"cpp.vec_isa_ok": True}):
            flagged = [str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()]
        cpu_vec_isa.valid_vec_isa_list.cache_clear()
        if probed != flagged:
            return False
        marker.parent.mkdir(parents=True, exist_ok=True)
        tmp = marker.with_name(f"{marker.name}.{os.getpid()}.tmp")
        tmp.write_text("\n".join(probed) + "\n")
        os.replace(tmp, marker)  # whole or absent, whoever writes last
    config.cpp.vec_isa_ok = True
    return True


@contextlib.contextmanager
def compile_lock(spec: Spec, device: torch.device, log):
    """Held by the one job that compiles a training step; others with the same step wait.

    The step depends on the model config, the batch size, the device and torch, not on
    the seed: the first job compiles it into inductor's on-disk cache, and the other
    seeds' jobs find it there (a few seconds instead of half a minute or more). Without
    the lock, jobs starting together would each compile the same step from cold.
    """
    import fcntl

    key = json.dumps({"model": spec.model.to_dict(), "batch": spec.train.batch_size,
                      "device": str(device), "torch": str(torch.__version__)}, sort_keys=True)
    folder = inductor_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"inductionlab-{hashlib.sha256(key.encode()).hexdigest()[:16]}.lock"
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("waiting for another job that compiles the same training step")
            fcntl.flock(handle, fcntl.LOCK_EX)
        start = time.perf_counter()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
        log(f"first step, compiling included, took {time.perf_counter() - start:.1f}s")
