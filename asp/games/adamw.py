"""AdamW, the trainer's optimizer, without :mod:`torch.optim`.

Every optimizer of :mod:`torch.optim` imports ``torch._dynamo`` (and with it ``sympy``) on its
first call: tens of megabytes of resident memory in the process that trains, for a compiler
that asp does not use. :class:`AdamW` is the same algorithm, written out: the same arithmetic as
``torch.optim.AdamW``'s single-tensor path (the one torch takes on the CPU), step for step, so
the same weights after the same steps; and the same ``state_dict``, so that each reads the
other's (a checkpoint of an earlier asp resumes on it).

>>> import torch
>>> layer = torch.nn.Linear(3, 1)
>>> optimizer = AdamW(layer.parameters(), lr=0.1, weight_decay=0.0)
>>> layer(torch.ones(2, 3)).sum().backward()
>>> optimizer.step()
>>> int(optimizer.state_dict()["state"][0]["step"])
1
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

__all__ = ["AdamW"]

_GROUP = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
          "fused": None, "decoupled_weight_decay": True}  # fmt: skip
"""The fields of ``torch.optim.AdamW``'s parameter groups that :class:`AdamW` does not vary, as
its ``state_dict`` writes them."""


class AdamW:
    """AdamW (Loshchilov and Hutter, decoupled weight decay) over ``params``, one parameter
    group, as ``torch.optim.AdamW(params, lr, betas, eps, weight_decay)`` computes it.

    :attr:`param_groups` is a list of one dict, as torch's: set its ``"lr"`` to change the rate.
    """

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter],
        *,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
    ) -> None:
        group: dict[str, Any] = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, **_GROUP}
        self.param_groups = [group | {"params": list(params)}]
        self.state: dict[torch.nn.Parameter, dict[str, torch.Tensor]] = {}
        """Each parameter's ``step`` (a float32 scalar on the CPU), ``exp_avg`` and
        ``exp_avg_sq``, once it has had a step."""

    @property
    def _params(self) -> list[torch.nn.Parameter]:
        params: list[torch.nn.Parameter] = self.param_groups[0]["params"]
        return params

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients (``set_to_none=False``: set them to zero)."""
        for param in self._params:
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                param.grad.detach_().zero_()

    @torch.no_grad()
    def step(self) -> None:
        """One step on every parameter that has a gradient."""
        group = self.param_groups[0]
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for param in self._params:
            grad = param.grad
            if grad is None:
                continue
            state = self.state.get(param)
            if state is None:
                state = self.state[param] = {
                    "step": torch.tensor(0.0),
                    "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
                    "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format),
                }
            state["step"] += 1
            if decay != 0:
                param.mul_(1 - lr * decay)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step = state["step"].item()
            bias_correction2_sqrt = (1 - beta2**step) ** 0.5
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            param.addcdiv_(exp_avg, denom, value=-(lr / (1 - beta1**step)))

    def state_dict(self) -> dict[str, Any]:
        """The state as ``torch.optim.AdamW.state_dict`` gives it: ``state`` by the index of
        each parameter, ``param_groups`` with the parameters' indices (live tensors: copy them
        to keep them)."""
        index = {id(param): i for i, param in enumerate(self._params)}
        group = {key: value for key, value in self.param_groups[0].items() if key != "params"}
        return {
            "state": {index[id(param)]: dict(state) for param, state in self.state.items()},
            "param_groups": [group | {"params": list(range(len(self._params)))}],
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the state that :meth:`state_dict`, or ``torch.optim.AdamW.state_dict``, gave
        for the same parameters: its moments as the parameters' dtype and device, its
        hyperparameters.

        :raises ValueError: a state of another shape: not one group, or another number of
            parameters.
        """
        groups = state_dict.get("param_groups")
        params = self._params
        if not isinstance(groups, list) or len(groups) != 1 or len(groups[0].get("params", ())) != len(params):
            raise ValueError(f"AdamW.load_state_dict: a state of one group of {len(params)} parameters expected")
        saved = groups[0]
        self.param_groups[0].update({key: value for key, value in saved.items() if key != "params"})
        self.state = {}
        for i, state in state_dict.get("state", {}).items():
            param = params[saved["params"].index(i)]
            step = state["step"]  # a tensor; a number in checkpoints of an older torch
            step = step.detach().to("cpu", torch.float32).clone() if torch.is_tensor(step) else torch.tensor(1.0 * step)
            self.state[param] = {
                "step": step,
                "exp_avg": state["exp_avg"].detach().to(param.device, param.dtype).clone(),
                "exp_avg_sq": state["exp_avg_sq"].detach().to(param.device, param.dtype).clone(),
            }
