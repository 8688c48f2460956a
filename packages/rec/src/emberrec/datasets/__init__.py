"""Datasets as emberdata pipes over local files (TorchRec's ``torchrec.datasets``): Criteo
click logs, MovieLens ratings, random batches, and a generator of Criteo-format files."""
