#include "cohort/comm/communicator.h"

#include "absl/strings/str_cat.h"

namespace cohort::comm {

size_t DataTypeSize(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat16: return 2;
    case DataType::kFloat64: return 8;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
  }
  return 0;
}

absl::string_view DataTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return "fp32";
    case DataType::kFloat16: return "fp16";
    case DataType::kFloat64: return "fp64";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
  }
  return "?";
}

absl::StatusOr<DataType> ParseDataType(absl::string_view name) {
  for (DataType d : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kInt32,
                     DataType::kInt64}) {
    if (DataTypeName(d) == name) return d;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name, "': expected fp32, fp16, fp64, int32 or int64"));
}

}  // namespace cohort::comm
