"""DataPipes: composable iterable and map-style stages with functional forms
(``torchdata.datapipes``)."""

from emberdata.datapipes import iter, map, utils
from emberdata.datapipes._base import DataChunk, IterDataPipe, MapDataPipe, functional_datapipe

__all__ = ["DataChunk", "IterDataPipe", "MapDataPipe", "functional_datapipe", "iter", "map",
           "utils"]
