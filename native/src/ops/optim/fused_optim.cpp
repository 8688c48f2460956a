// The multi-tensor optimizer steps behind ember.optim's foreach/fused paths (PyTorch's
// _fused_sgd_ / _fused_adam_ / _fused_adamw_ family): argument checks; the kernels in
// backend/cpu/optim_kernels.cpp (Note [fused optimizers]).
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/ops.h"
#include "ops/dims.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<void (*)(const FusedSgdArgs&)> fused_sgd_stub("_fused_sgd_");
DispatchStub<void (*)(const FusedAdamArgs&)> fused_adam_stub("_fused_adam_");
DispatchStub<void (*)(const FusedAdagradArgs&)> fused_adagrad_stub("_fused_adagrad_");
DispatchStub<void (*)(const FusedRmspropArgs&)> fused_rmsprop_stub("_fused_rmsprop_");

namespace {

// Each state list is empty (unused) or matches params one to one: same shape, dtype, device,
// contiguous. The step counters must be 0-dim.
void check_lists(const char* op, const std::vector<Tensor>& params,
                 std::initializer_list<std::pair<const char*, const std::vector<Tensor>*>> lists,
                 bool grads_required, const std::vector<Tensor>* steps) {
  for (const Tensor& p : params) {
    EMBER_CHECK(is_floating_point(p.dtype()), TypeError, "[", op,
                "] expected floating point parameters, but got a tensor of dtype ", dtype_name(p.dtype()));
    EMBER_CHECK(p.dtype() == params[0].dtype() && p.device() == params[0].device(), ValueError, "[", op,
                "] expected every parameter on one device with one dtype, but got ", dtype_name(p.dtype()),
                " on ", p.device().str(), " beside ", dtype_name(params[0].dtype()), " on ",
                params[0].device().str());
    EMBER_CHECK(p.is_contiguous(), ValueError, "[", op, "] expected contiguous parameters");
  }
  for (const auto& [name, list] : lists) {
    if (list->empty() && !(grads_required && std::string(name) == "grads")) continue;
    EMBER_CHECK(list->size() == params.size(), ValueError, "[", op, "] expected ", params.size(), " ", name,
                ", but got ", list->size());
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor& t = (*list)[i];
      EMBER_CHECK(t.sizes() == params[i].sizes() && t.dtype() == params[i].dtype() &&
                      t.device() == params[i].device() && t.is_contiguous(),
                  ValueError, "[", op, "] expected ", name, "[", i, "] to be a contiguous ",
                  dtype_name(params[i].dtype()), " tensor of shape ", dims::str(params[i].sizes()),
                  ", but got ", dtype_name(t.dtype()), " of shape ", dims::str(t.sizes()));
    }
  }
  if (steps != nullptr) {
    EMBER_CHECK(steps->size() == params.size(), ValueError, "[", op, "] expected ", params.size(),
                " state_steps, but got ", steps->size());
    for (const Tensor& s : *steps) {
      EMBER_CHECK(s.numel() == 1, ValueError, "[", op, "] expected one-element step counters, but got shape ",
                  dims::str(s.sizes()));
    }
  }
}

// Called before the kernel runs: bump_version raises for read-only memory (Note [read-only
// storage]), so a refused step has written nothing.
void bump(const std::vector<Tensor>& list) {
  for (const Tensor& t : list) t.bump_version();
}

}  // namespace

std::vector<Tensor> _fused_sgd_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                const std::vector<Tensor>& momentum_buffers, double weight_decay,
                                double momentum, double lr, double dampening, bool nesterov, bool maximize,
                                bool is_first_step) {
  const char* op = "_fused_sgd_";
  if (momentum != 0) {
    EMBER_CHECK(momentum_buffers.size() == params.size(), ValueError, "[", op, "] expected ", params.size(),
                " momentum_buffers with momentum ", momentum, ", but got ", momentum_buffers.size());
  }
  check_lists(op, params, {{"grads", &grads}, {"momentum_buffers", &momentum_buffers}}, true, nullptr);
  if (params.empty()) return params;
  bump(params);
  bump(momentum_buffers);
  fused_sgd_stub.get(params[0].device().type)(FusedSgdArgs{&params, &grads, &momentum_buffers, weight_decay,
                                                           momentum, lr, dampening, nesterov, maximize,
                                                           is_first_step});
  return params;
}

std::vector<Tensor> _fused_adam_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                 const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                                 const std::vector<Tensor>& max_exp_avg_sqs,
                                 const std::vector<Tensor>& state_steps, double lr, double beta1,
                                 double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
                                 bool decoupled_weight_decay) {
  const char* op = decoupled_weight_decay ? "_fused_adamw_" : "_fused_adam_";
  EMBER_CHECK(exp_avgs.size() == params.size() && exp_avg_sqs.size() == params.size() &&
                  (!amsgrad || max_exp_avg_sqs.size() == params.size()),
              ValueError, "[", op, "] expected one exp_avg, exp_avg_sq", amsgrad ? " and max_exp_avg_sq" : "",
              " per parameter");
  check_lists(op, params,
              {{"grads", &grads},
               {"exp_avgs", &exp_avgs},
               {"exp_avg_sqs", &exp_avg_sqs},
               {"max_exp_avg_sqs", &max_exp_avg_sqs}},
              true, &state_steps);
  if (params.empty()) return params;
  for (const auto* l : {&params, &exp_avgs, &exp_avg_sqs, &max_exp_avg_sqs, &state_steps}) bump(*l);
  fused_adam_stub.get(params[0].device().type)(
      FusedAdamArgs{&params, &grads, &exp_avgs, &exp_avg_sqs, &max_exp_avg_sqs, &state_steps, lr, beta1,
                    beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay});
  return params;
}

std::vector<Tensor> _fused_adagrad_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                    const std::vector<Tensor>& state_sums,
                                    const std::vector<Tensor>& state_steps, double lr, double lr_decay,
                                    double weight_decay, double eps, bool maximize) {
  const char* op = "_fused_adagrad_";
  EMBER_CHECK(state_sums.size() == params.size(), ValueError, "[", op,
              "] expected one state_sum per parameter");
  check_lists(op, params, {{"grads", &grads}, {"state_sums", &state_sums}}, true, &state_steps);
  if (params.empty()) return params;
  for (const auto* l : {&params, &state_sums, &state_steps}) bump(*l);
  fused_adagrad_stub.get(params[0].device().type)(FusedAdagradArgs{
      &params, &grads, &state_sums, &state_steps, lr, lr_decay, weight_decay, eps, maximize});
  return params;
}

std::vector<Tensor> _fused_rmsprop_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                    const std::vector<Tensor>& square_avgs,
                                    const std::vector<Tensor>& grad_avgs,
                                    const std::vector<Tensor>& momentum_buffers,
                                    const std::vector<Tensor>& state_steps, double lr, double alpha,
                                    double eps, double weight_decay, double momentum, bool centered,
                                    bool maximize) {
  const char* op = "_fused_rmsprop_";
  EMBER_CHECK(square_avgs.size() == params.size() && (!centered || grad_avgs.size() == params.size()) &&
                  (momentum <= 0 || momentum_buffers.size() == params.size()),
              ValueError, "[", op, "] expected one square_avg", centered ? ", grad_avg" : "",
              momentum > 0 ? " and momentum_buffer" : "", " per parameter");
  check_lists(op, params,
              {{"grads", &grads},
               {"square_avgs", &square_avgs},
               {"grad_avgs", &grad_avgs},
               {"momentum_buffers", &momentum_buffers}},
              true, &state_steps);
  if (params.empty()) return params;
  for (const auto* l : {&params, &square_avgs, &grad_avgs, &momentum_buffers, &state_steps}) bump(*l);
  fused_rmsprop_stub.get(params[0].device().type)(
      FusedRmspropArgs{&params, &grads, &square_avgs, &grad_avgs, &momentum_buffers, &state_steps, lr, alpha,
                       eps, weight_decay, momentum, centered, maximize});
  return params;
}

}  // namespace ember
