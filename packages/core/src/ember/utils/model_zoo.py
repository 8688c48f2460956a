"""ember.utils.model_zoo (torch.utils.model_zoo): the older name of ember.hub's checkpoint download."""

from ..hub import load_state_dict_from_url

load_url = load_state_dict_from_url

__all__ = ["load_url"]
