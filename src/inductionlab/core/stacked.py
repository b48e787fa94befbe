"""Several seeds of one variant trained as one stacked model (``seeds_per_job`` > 1): their
parameters stacked and vmapped, each seed with its own batches, loss, optimiser moments and
checkpoints, each bit-identical to its own run."""
from __future__ import annotations

import copy
import time

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from .metrics import per_token_loss
from .model import AttentionOnlyTransformer, build_model
from .seeding import generator
from .resume import adam_moments, restore_adam
from .spec import Spec
from .task_kinds import training_tokens
from .train import _SeedRun, _setup, first_non_finite, optimizer, train_step


class StackedModels(nn.Module):
    """k models of one config run as one: every weight gets a leading seed axis [k, ...].

    ``forward(tokens [k, B, T])`` gives logits [k, B, T, V]: model i on batch i, the
    same numbers as model i alone (the stacked weights are the optimised parameters).
    ``member(i)`` is model i as a plain model sharing no memory with the stack.
    """

    def __init__(self, models: list):
        super().__init__()
        params, buffers = stack_module_state(models)
        self.weights = nn.ParameterDict({k.replace(".", "/"): nn.Parameter(v.detach().clone())
                                         for k, v in params.items()})
        for name, value in buffers.items():
            self.register_buffer(name.replace(".", "/"), value.clone())
        template = copy.deepcopy(models[0]).to("meta")
        # Under vmap the fused kernel falls back to one call per seed; the explicit
        # softmax batches over seeds.
        template.attention_form = "explicit"
        self._template = (template,)  # a weightless module, not a submodule
        self.k = len(models)

    def named_weights(self):
        """``(name, stacked parameter)`` with the plain model's parameter names."""
        return [(k.replace("/", "."), v) for k, v in self.weights.items()]

    def _state(self) -> tuple[dict, dict]:
        params = {k.replace("/", "."): v for k, v in self.weights.items()}
        buffers = {k.replace("/", "."): v for k, v in self.named_buffers()}
        return params, buffers

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        params, buffers = self._state()
        run_one = lambda p, b, t: functional_call(self._template[0], (p, b), (t,))  # noqa: E731
        return vmap(run_one)(params, buffers, tokens)

    def member(self, i: int):
        params, buffers = self._state()
        model = AttentionOnlyTransformer(self._template[0].cfg)
        model.load_state_dict({k: v[i].detach().clone() for k, v in {**params, **buffers}.items()})
        return model.to(self.weights["W_E"].device)


def per_seed_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Each seed's mean loss [k] from stacked logits [k, B, T, V] and tokens [k, B, T].

    Their sum is the stacked objective: each seed's gradient is its own model's.
    """
    k = tokens.shape[0]
    return per_token_loss(logits.flatten(0, 1), tokens.flatten(0, 1)).view(k, -1).mean(1)


def train_stacked(specs: list, out_dirs: list, threads: int = 1, log=None) -> list[dict]:
    """Train several seeds of one model spec as one stacked model; per-seed outputs as :func:`train`.

    Every seed starts from its own initial weights and sees its own batches, as in
    :func:`train`; AdamW acts element by element, so each seed follows the same
    trajectory as alone, up to floating-point summation order.
    """
    if len(specs) != len(out_dirs) or not specs:
        raise ValueError(f"{len(specs)} spec(s) for {len(out_dirs)} output folder(s)")
    specs = [Spec.of(s) for s in specs]
    if any(s.without_seed() != specs[0].without_seed() for s in specs):
        raise ValueError("stacked training needs specs that differ only in their seed: "
                         f"{[s.variant for s in specs]}")
    if specs[0].train.intervention is not None:
        raise ValueError(f"train.intervention: {specs[0].variant} is trained with "
                         f"{specs[0].train.intervention.label}, which stacked training does not "
                         "take; train its seeds one by one (seeds_per_job: 1)")
    log, device, val = _setup(specs[0], threads, log)
    tcfg, task = specs[0].train, specs[0].task
    seeds = [s.seed for s in specs]
    mode = f"stacked {seeds}"
    runs = [_SeedRun(spec, out, val, log, mode=mode) for spec, out in zip(specs, out_dirs)]
    # Every member saves its state at the same steps and deletes older ones only after
    # all have saved, so the newest step saved by all of them is always complete.
    common = sorted(set.intersection(*(set(run.resume.steps()) for run in runs)))
    first, states = 0, None
    for step in reversed(common):  # the newest step whose state every member can read
        found = [run.readable(step) for run in runs]
        if all(st is not None for st in found):
            first, states = step, [run.restore(step, st) for run, st in zip(runs, found)]
            break
    members = [build_model(specs[0].model, s) for s in seeds]
    for model, state in zip(members, states or []):
        model.load_state_dict(state["model"])
    stack = StackedModels(members).to(device)
    opt = optimizer(stack.parameters(), tcfg.lr, tcfg.weight_decay)
    gens = [generator(s, "train-batches") for s in seeds]
    if states:
        restore_adam(opt, stack.named_weights(), [st["adam"] for st in states])
        for gen, state in zip(gens, states):
            gen.set_state(state["batch_rng"])
    log(f"[{specs[0].variant} seeds {seeds}] stacked, {tcfg.steps} steps, batch "
        f"{tcfg.batch_size} per seed, device {device}, {torch.get_num_threads()} thread(s)")
    start = time.perf_counter() - (states[0]["elapsed"] if states else 0.0)
    losses = None
    first_bad = torch.full((len(seeds),), -1, dtype=torch.long, device=device)
    for step in range(first, runs[0].steps + 1):
        if runs[0].due(step) and not (states and step == first):
            elapsed = time.perf_counter() - start
            for i, run in enumerate(runs):
                run.check_finite(first_bad[i])
                member = stack.member(i)
                run.at_step(step, member, None if losses is None else losses[i], elapsed)
                run.save_state(step, member, adam_moments(opt, stack.named_weights(), i),
                               gens[i], elapsed)
            for run in runs:
                run.resume.keep_from(step)
        if step == runs[0].steps:
            break
        tokens = torch.stack([training_tokens(task, tcfg.batch_size, g) for g in gens]).to(device)
        per_seed = per_seed_loss(stack(tokens), tokens)
        train_step(per_seed.sum(), opt)
        losses = per_seed.detach()
        first_bad = first_non_finite(first_bad, losses, step)
    rows = [run.finish(stack.member(i)) for i, run in enumerate(runs)]
    log(f"[{specs[0].variant} seeds {seeds}] done in {time.perf_counter() - start:.1f}s"
        + (f" (resumed at step {first})" if states else ""))
    return rows
