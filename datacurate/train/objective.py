"""What a training step minimises, behind one protocol (lingua's ``Stateful`` style).

Per step the loop calls ``begin_step(parts, model)``, then ``loss(losses, part)`` for each
micro-batch (back-propagated as is: the parts' losses add up to the step's), then
``end_step(step)`` after the optimiser step; ``state_dict`` / ``load_state_dict`` travel
with the checkpoints (an empty state is not written). ``sides`` names the shards' side
arrays ``loss`` reads (``part.side[name]``). Plain (here), RHO-1 (:mod:`.rho1`) and DoReMi's
Group DRO (:mod:`.doremi`); :func:`datacurate.train.loop.make_objective` picks one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Part:
    """One micro-batch of a step."""

    tokens: torch.Tensor  # (b, L)
    side: dict[str, torch.Tensor]  # side arrays by name, float32 (b, L-1) each, on the model's device
    domains: np.ndarray  # (b,) domain ids
    share: float  # its share of the step's sequences


class Objective:
    sides: tuple[str, ...] = ()

    def begin_step(self, parts: list[Part], model: torch.nn.Module) -> None:
        """Before the step's first micro-batch; ``model(x, y)`` gives per-token losses."""

    def loss(self, losses: torch.Tensor, part: Part) -> torch.Tensor:
        """The micro-batch's share of the step's loss, from its per-token losses (b, L-1)."""
        raise NotImplementedError

    def end_step(self, step: int) -> None:
        """After optimiser step ``step`` (counted from 1)."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Back to a checkpoint's state (``{}`` when it has none)."""

    def describe(self) -> str:
        return type(self).__name__


class PlainObjective(Objective):
    def loss(self, losses: torch.Tensor, part: Part) -> torch.Tensor:
        return losses.mean() * part.share

    def describe(self) -> str:
        return "full-token loss"
