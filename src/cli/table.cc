#include "cli/table.h"

#include <algorithm>

#include "absl/strings/numbers.h"

namespace cohort::cli {

void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows) {
  const size_t n = header.size();
  std::vector<size_t> widths(n, 0);
  std::vector<bool> numeric(n, !rows.empty());
  for (size_t i = 0; i < n; ++i) widths[i] = header[i].size();
  for (const auto& row : rows) {
    for (size_t i = 0; i < n && i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
      double unused;
      if (!row[i].empty() && row[i] != "-" && !absl::SimpleAtod(row[i], &unused)) numeric[i] = false;
    }
  }
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < n; ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      const std::string pad(widths[i] - cell.size(), ' ');
      if (i > 0) line += "  ";
      line += numeric[i] ? pad + cell : cell + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  print(header);
  for (const auto& row : rows) print(row);
}

}  // namespace cohort::cli
