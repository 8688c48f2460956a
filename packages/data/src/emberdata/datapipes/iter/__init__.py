"""Iterable-style DataPipes (``torchdata.datapipes.iter``).

Every class below with a functional name is also a method of every IterDataPipe:
``IterableWrapper(range(8)).shuffle().sharding_filter().map(fn).batch(4)``. The package README
lists them all.
"""

from emberdata.datapipes._base import DataChunk, IterDataPipe
from emberdata.datapipes.iter._archive import (
    CompressionType,
    Decompressor,
    TarArchiveLoader,
    UnsafeArchiveError,
    ZipArchiveLoader,
)
from emberdata.datapipes.iter._callable import Collator, Filter, FlatMapper, Mapper
from emberdata.datapipes.iter._combinatorics import (
    InBatchShuffler,
    RandomSplitter,
    SampleMultiplexer,
    Shuffler,
)
from emberdata.datapipes.iter._combining import (
    Concater,
    Demultiplexer,
    Forker,
    IterKeyZipper,
    MapKeyZipper,
    Multiplexer,
    Zipper,
)
from emberdata.datapipes.iter._fileio import (
    FileLister,
    FileOpener,
    IoPathFileLister,
    LocalPathManager,
    Saver,
    StreamWrapper,
)
from emberdata.datapipes.iter._grouping import (
    Batcher,
    BucketBatcher,
    Grouper,
    MaxTokenBucketizer,
    UnBatcher,
)
from emberdata.datapipes.iter._hashing import HashChecker
from emberdata.datapipes.iter._online import HttpReader, OnlineReader
from emberdata.datapipes.iter._prefetch import Prefetcher
from emberdata.datapipes.iter._sharding import SHARDING_PRIORITIES, ShardingFilter
from emberdata.datapipes.iter._text import (
    CSVDictParser,
    CSVParser,
    Decoder,
    JsonParser,
    LineReader,
    ParagraphAggregator,
    RoutedDecoder,
    basichandlers,
    extension_extract_fn,
    pickle_handler,
)
from emberdata.datapipes.iter._util import Cycler, Enumerator, Header
from emberdata.datapipes.iter._wrapper import IterableWrapper

__all__ = [
    "SHARDING_PRIORITIES",
    "Batcher",
    "BucketBatcher",
    "CSVDictParser",
    "CSVParser",
    "Collator",
    "CompressionType",
    "Concater",
    "Cycler",
    "DataChunk",
    "Decoder",
    "Decompressor",
    "Demultiplexer",
    "Enumerator",
    "FileLister",
    "FileOpener",
    "Filter",
    "FlatMapper",
    "Forker",
    "Grouper",
    "HashChecker",
    "Header",
    "HttpReader",
    "InBatchShuffler",
    "IoPathFileLister",
    "IterDataPipe",
    "IterKeyZipper",
    "IterableWrapper",
    "JsonParser",
    "LineReader",
    "LocalPathManager",
    "MapKeyZipper",
    "Mapper",
    "MaxTokenBucketizer",
    "Multiplexer",
    "OnlineReader",
    "ParagraphAggregator",
    "Prefetcher",
    "RandomSplitter",
    "RoutedDecoder",
    "SampleMultiplexer",
    "Saver",
    "ShardingFilter",
    "Shuffler",
    "StreamWrapper",
    "TarArchiveLoader",
    "UnBatcher",
    "UnsafeArchiveError",
    "ZipArchiveLoader",
    "Zipper",
    "basichandlers",
    "extension_extract_fn",
    "pickle_handler",
]
