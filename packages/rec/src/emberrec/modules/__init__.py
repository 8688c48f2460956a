"""Embedding tables and the collections that look them up (TorchRec's ``torchrec.modules``)."""
