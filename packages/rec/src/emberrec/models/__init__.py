"""Recommendation models (TorchRec's ``torchrec.models``): DLRM and its DCN variant, two towers."""
