#pragma once
// Derivative helpers (see formulas.h) for the fbgemm:: ops of declarations.py (FBGEMM's
// recommendation kernels, src/ops/fbgemm/). The table-batched embedding ops have no formulas
// here: their backward runs the optimizer in place (ember/tbe, Note [fused optimizer backward]).
#include "autograd/formulas.h"
#include "ember/fbgemm_ops.h"
