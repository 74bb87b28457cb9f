#pragma once
// The key of a parameter's entry in a LibTorch optimizer's state map. LibTorch keys that map by
// the parameter's TensorImpl: printed as a string up to 2.x's early releases (Debian 12's 1.13),
// as the pointer itself in later ones (PyTorch 2.11's LibTorch, the GPU build). Cohort's
// optimizers name the key through these, so one source compiles against both.

#include <torch/optim/optimizer.h>

#include <string>
#include <type_traits>
#include <utility>

namespace cohort::runtime::optim {

// The optimizer's state map (torch::optim::Optimizer::state()) and its key, as this LibTorch
// defines them.
using ParamStateMap = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>;
using ParamStateKey = ParamStateMap::key_type;

// The key under which `param`'s state is stored: the same one LibTorch's own optimizers use,
// so states saved by LibTorch's SGD load into FusedSGD and back.
ParamStateKey ParamKey(const torch::Tensor& param);

}  // namespace cohort::runtime::optim
