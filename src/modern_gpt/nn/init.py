"""Every parameter's init, chosen once and drawn in one place: the model's rule for its own weights, a change's
declaration for what it adds or re-initialises (nn/model.py's GPT calls init_weights last)."""

from __future__ import annotations

import fnmatch
import math
import torch
import torch.nn as nn

from .. import changes

GPT = nn.Module                              # nn/model.py's GPT (which imports this module), for the hints

# The init rule for the model's own weights, chosen by module and name: every Linear is one of these by name.
# Inputs (and the head) start at std 0.02; the projections that write into the residual stream at
# 0.02 / sqrt(2 · n_layer) (GPT-2), so that the stream's variance does not grow with depth; norm gains at 1, biases
# at 0. A change chooses the init of each parameter it adds (its modules' `inits`) and of any own weight it names in
# its declaration's `reinit`; a module of the model's own of a kind the rule does not know (a new norm) declares its
# parameters' in `inits` too; check_init_covers names any parameter that none of these covers.
INPUT_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "gate", "up", "lm_head")
OUTPUT_PROJECTIONS = ("o_proj", "down")
NORM_TYPES = (nn.LayerNorm, nn.RMSNorm)


def own_rule(module: nn.Module, module_name: str, param: str) -> str | None:
    """The model's rule for its own parameter `param` of `module` (named `module_name`): 'normal' (0.02),
    'residual' (0.02 / sqrt(2 · n_layer)), 'ones' or 'zeros'; None where the rule does not know it."""
    last = module_name.rsplit(".", 1)[-1]
    if isinstance(module, nn.Embedding) and param == "weight":
        return "normal"
    if isinstance(module, nn.Linear) and param == "weight":
        return "normal" if last in INPUT_PROJECTIONS else "residual" if last in OUTPUT_PROJECTIONS else None
    if isinstance(module, nn.Linear) and param == "bias":
        return "zeros"
    if isinstance(module, NORM_TYPES):
        return {"weight": "ones", "bias": "zeros"}.get(param)
    return None


def draw(p: torch.Tensor, rule: str | float, n_layer: int) -> None:
    """Initialise p in place by a rule: 'normal', 'residual', 'zeros', 'ones', or a number (every entry)."""
    if rule == "normal":
        nn.init.normal_(p, mean=0.0, std=0.02)
    elif rule == "residual":
        nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))
    elif rule in ("zeros", "ones"):
        nn.init.zeros_(p) if rule == "zeros" else nn.init.ones_(p)
    elif isinstance(rule, (int, float)) and not isinstance(rule, bool):
        nn.init.constant_(p, float(rule))
    else:
        raise TypeError(f"init rule {rule!r}: allowed are 'normal', 'residual', 'zeros', 'ones' or a number")


def init_rules(model: GPT) -> dict[str, tuple[str | float, str]]:
    """Each parameter's init, chosen once: (rule, who chose it), the change's where it declares one (its modules'
    `inits`, its declaration's `reinit`: the change's name), else the model's rule ('model'). A TypeError names any
    parameter that neither covers, and any that two changes both claim."""
    chosen: dict[str, tuple[str | float, str]] = {}
    for mname, module in model.named_modules():
        for pname, _ in module.named_parameters(recurse=False):
            full = f"{mname}.{pname}" if mname else pname
            if full in chosen:                           # a tied weight, met again
                continue
            owner = model.plug_of(mname)
            if owner is None:                            # the model's: its module's `inits`, else the rule
                rule, who = getattr(module, "inits", {}).get(pname) or own_rule(module, mname, pname), "model"
            else:                                        # a change's module: its own declaration
                rule, who = getattr(model.plugs[owner], "inits", {}).get(full[len(owner) + 1:]), owner
            if rule is None:
                local = full[len(owner) + 1:] if owner else pname
                raise TypeError(f"{full}: a parameter no init covers; a change's module declares each of its "
                                f"parameters' init in `inits` ({{'{local}': 'zeros'}}; rules: normal, residual, zeros, "
                                "ones, or a number), and the model's rule (nn/model.py's own_rule) knows Linear by "
                                f"name ({', '.join(INPUT_PROJECTIONS + OUTPUT_PROJECTIONS)}), Embedding and norms")
            chosen[full] = (rule, who)
    for name, _ in model.cfg.changes:                    # a change's new init for the model's own weights
        for pattern, rule in changes.plugged(name).reinit.items():
            hits = [p for p, (_, who) in chosen.items() if who == "model" and fnmatch.fnmatchcase(p, pattern)]
            if not hits:
                raise TypeError(f"{name}: reinit {pattern!r} names none of the model's own parameters")
            for p in hits:
                chosen[p] = (rule, name)
    return chosen


def check_init_covers(model: GPT) -> None:
    """A TypeError naming any parameter, of any kind, whose init neither the model's rule nor a change chooses."""
    init_rules(model)


def init_weights(model: GPT) -> None:
    """Draw every parameter once its init is chosen (init_rules). The model's own matrices are drawn as GPT-2's
    code drew them, so that the initial weights of every committed run stay bit for bit what they were: every
    Embedding and Linear weight at 0.02 in module order (a tied matrix twice) with zero biases, then the residual
    projections again at their own std. A matrix a change re-initialises still takes those draws, so that every
    other weight is the one the model without the change starts from. Then, in order, each parameter whose init
    is not one of those draws: a change's choice, norm gains (1) and biases (0)."""
    rules, n_layer = init_rules(model), model.cfg.n_layer
    own = {n for n, (_, who) in rules.items() if model.plug_of(n.rpartition(".")[0]) is None}
    with torch.no_grad():
        for mname, module in model.named_modules():      # tok_emb and a tied lm_head: the same matrix, twice
            if isinstance(module, (nn.Linear, nn.Embedding)) and model.plug_of(mname) is None:
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if isinstance(module, nn.Linear) and module.bias is not None:
                    nn.init.zeros_(module.bias)
        for name, p in model.named_parameters():
            if name in own and name.endswith(tuple(f"{n}.weight" for n in OUTPUT_PROJECTIONS)):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))
        for name, p in model.named_parameters():
            rule, who = rules[name]
            if who == "model" and rule in ("normal", "residual"):
                continue                                 # drawn above
            draw(p, rule, n_layer)
