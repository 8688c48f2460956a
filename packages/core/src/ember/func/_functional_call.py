"""functional_call (torch.func.functional_call): a Module run with substituted tensors.

The named parameters and buffers are swapped into the module (in the modules' own dicts, so
in-place buffer updates during forward land in the substituted tensors), the module runs, and
the originals are put back, also when forward raises. Since only tensors change, grad, vmap
and jacrev of the call differentiate or batch through the substituted tensors.
"""

from __future__ import annotations

__all__ = ["functional_call"]


def _owner(module, name: str):
    path, _, leaf = name.rpartition(".")
    owner = module.get_submodule(path) if path else module
    return owner, leaf


def _tied_names(module) -> dict:
    """name -> every state_dict name of the same tensor (tied weights)."""
    groups: dict[int, list] = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        groups.setdefault(id(t), []).append(name)
    return {name: names for names in groups.values() for name in names}


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    dicts = parameter_and_buffer_dicts if isinstance(parameter_and_buffer_dicts, (tuple, list)) else \
        (parameter_and_buffer_dicts,)
    replacements: dict = {}
    for d in dicts:
        for key, value in d.items():
            if key in replacements:
                raise ValueError(f"{key} appeared in multiple dictionaries; behavior of functional call is "
                                 f"ambiguous")
            replacements[key] = value
    known = {name for name, _ in module.named_parameters(remove_duplicate=False)} | \
        {name for name, _ in module.named_buffers(remove_duplicate=False)}
    if tie_weights:
        tied = _tied_names(module)
        for key in list(replacements):
            for other in tied.get(key, []):
                if other in replacements and replacements[other] is not replacements[key]:
                    raise ValueError(f"functional_call got multiple values for keys {sorted([key, other])}, which are "
                                     f"tied. Consider using tie_weights=False")
                replacements.setdefault(other, replacements[key])
    if strict:
        missing = sorted(known - set(replacements))
        unexpected = sorted(set(replacements) - known)
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append("Unexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
            if missing:
                parts.append("Missing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(parts))
    swapped = []  # (store, leaf, original)
    try:
        for key, value in replacements.items():
            if key not in known:
                continue  # a name the module does not have (strict=False): ignored, as in PyTorch
            owner, leaf = _owner(module, key)
            store = owner._parameters if leaf in owner._parameters else owner._buffers
            swapped.append((store, leaf, store[leaf]))
            store[leaf] = value
        args = () if args is None else (args if isinstance(args, tuple) else (args,))
        return module(*args, **(kwargs or {}))
    finally:
        for store, leaf, original in reversed(swapped):
            store[leaf] = original
