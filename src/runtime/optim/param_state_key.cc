#include "cohort/optim/param_state_key.h"

#include <sstream>

namespace cohort::runtime::optim {
namespace {

// One of these two is called, depending on the key type of this LibTorch; both compile.
template <typename Key>
Key KeyOf(c10::TensorImpl* impl);

template <>
[[maybe_unused]] std::string KeyOf<std::string>(c10::TensorImpl* impl) {
  std::ostringstream key;  // c10::guts::to_string's form: the pointer as a stream prints it
  key << impl;
  return key.str();
}

template <>
[[maybe_unused]] void* KeyOf<void*>(c10::TensorImpl* impl) {
  return impl;
}

}  // namespace

ParamStateKey ParamKey(const torch::Tensor& param) {
  return KeyOf<ParamStateKey>(param.unsafeGetTensorImpl());
}

}  // namespace cohort::runtime::optim
