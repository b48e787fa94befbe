"""The train stage's settings: the check of its section (``train:``). Light: the config
check imports it."""
from __future__ import annotations

from ...config import settings_check


@settings_check("train")
def check_settings(train: dict, config: dict) -> list[str]:
    """The validation schedule within the run, and enough checkpoints for the dynamics
    stage's fit; one line per problem naming the key."""
    problems = []
    if train["eval_every"] > train["steps"]:
        problems.append(f"train.eval_every: {train['eval_every']} exceeds train.steps = "
                        f"{train['steps']}; the log would hold only the first and last step")
    return problems + checkpoint_problems(train)


def checkpoint_problems(train: dict) -> list[str]:
    """The dynamics stage fits a logistic curve to every model's checkpoints, which needs
    :data:`~inductionlab.core.bounds.MIN_FIT_POINTS` of them."""
    from ...core.bounds import MIN_FIT_POINTS
    from ...core.loading import checkpoint_steps

    steps, n = train["steps"], train["n_checkpoints"]
    got = checkpoint_steps(steps, n)
    if len(got) >= MIN_FIT_POINTS:
        return []
    shown = ", ".join(map(str, got))
    why = (f"the dynamics stage fits a logistic curve to every model's checkpoints, which "
           f"needs at least {MIN_FIT_POINTS}")
    enough = next((k for k in range(n, 1001) if len(checkpoint_steps(steps, k)) >= MIN_FIT_POINTS), None)
    if enough is None:
        return [f"train.steps: {steps} step(s) leave room for {len(got)} checkpoints (steps "
                f"{shown}); {why}: use steps >= {MIN_FIT_POINTS - 1}"]
    return [f"train.n_checkpoints: {n} gives {len(got)} checkpoints (steps {shown}); {why}: "
            f"use n_checkpoints >= {enough}"]
