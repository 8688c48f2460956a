"""Map-style DataPipes (``torchdata.datapipes.map``): ``dp[key]`` instead of iteration.

=====================  ====================  ===========================================
class                  functional name       gives
=====================  ====================  ===========================================
SequenceWrapper        (source)              ``sequence[i]``
Mapper                 map(fn)               ``fn(dp[i])``
Batcher                batch(batch_size)     batch ``i`` of the items
Concater               concat(*dps)          the inputs' items one after another
Zipper                 zip(*dps)             ``(dp[i], other[i], ...)``
Shuffler               shuffle()             an IterDataPipe visiting all items at random
MapToIterConverter     to_iter_datapipe()    an IterDataPipe of ``dp[i]`` in order
=====================  ====================  ===========================================

An IterDataPipe becomes a MapDataPipe with ``to_map_datapipe(key_value_fn)``
(:class:`IterToMapConverter`).
"""

from emberdata.datapipes._base import MapDataPipe
from emberdata.datapipes.map._combinatorics import Shuffler
from emberdata.datapipes.map._converter import IterToMapConverter, MapToIterConverter
from emberdata.datapipes.map._map import Batcher, Concater, Mapper, SequenceWrapper, Zipper

__all__ = [
    "Batcher",
    "Concater",
    "IterToMapConverter",
    "MapDataPipe",
    "MapToIterConverter",
    "Mapper",
    "SequenceWrapper",
    "Shuffler",
    "Zipper",
]
