"""Model-parallel embeddings (TorchRec's ``torchrec.distributed``).

``types`` holds the vocabulary shared by planning and execution (``ShardingType``,
``ParameterSharding``, ``ShardingPlan``, ``ModuleSharder``); ``planner`` turns a model, a
``Topology`` and the sharders into a ``ShardingPlan``; ``embeddingbag`` and ``embedding`` hold
the sharders of the embedding collections.
"""
