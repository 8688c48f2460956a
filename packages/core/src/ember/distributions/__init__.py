"""ember.distributions: parameterizable probability distributions and sampling functions, with
PyTorch 2.2's torch.distributions API (names, arguments, shapes, validation and its errors).

    policy = Categorical(logits=net(state))
    action = policy.sample()
    loss = -policy.log_prob(action) * reward          # REINFORCE

    z = Normal(mu, sigma).rsample()                    # pathwise (reparameterized) gradient

Reparameterized sampling (`rsample`, `has_rsample`): Normal, LogNormal, Uniform, Exponential,
Laplace, Gumbel, Cauchy, HalfNormal, HalfCauchy, MultivariateNormal, LowRankMultivariateNormal,
Pareto, Weibull, Kumaraswamy, GeneralizedPareto, ContinuousBernoulli, RelaxedBernoulli,
RelaxedOneHotCategorical, LogisticNormal, and - through an implicit reparameterization gradient of
the gamma sampler - Gamma, Chi2, Beta, Dirichlet, StudentT, InverseGamma, FisherSnedecor and Wishart.
Validation (`validate_args`, on by default as in PyTorch unless Python runs with -O) raises
ValueError for parameters outside `arg_constraints` and for values outside `support`.
"""

from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F403 - PyTorch exports the transforms here too
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = [
    "ContinuousBernoulli", "FisherSnedecor", "GeneralizedPareto", "InverseGamma", "Kumaraswamy", "NegativeBinomial",
    "Pareto", "VonMises", "Weibull", "LogisticNormal", "LowRankMultivariateNormal", "MixtureSameFamily",
    "RelaxedBernoulli", "RelaxedOneHotCategorical", "LKJCholesky", "Wishart",
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "constraints", "Dirichlet", "Distribution",
    "Exponential", "ExponentialFamily", "Gamma", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
    "Laplace", "LogNormal", "Multinomial", "MultivariateNormal", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Poisson", "StudentT", "TransformedDistribution", "Uniform",
    "biject_to", "kl_divergence", "register_kl", "transform_to", "transforms",
]
__all__.extend(transforms.__all__)
