#include "cli/table.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "common/terminal_text.h"

namespace cohort::cli {
namespace {

// A number, or a number followed by a unit made of letters, '%' and '/' (after one space).
bool IsNumberCell(absl::string_view cell) {
  size_t end = cell.size();
  while (end > 0 &&
         (absl::ascii_isalpha(cell[end - 1]) || cell[end - 1] == '%' || cell[end - 1] == '/')) {
    --end;
  }
  if (end < cell.size() && end > 0 && cell[end - 1] == ' ') --end;
  double unused;
  return end > 0 && absl::SimpleAtod(cell.substr(0, end), &unused);
}

// Bytes in the largest binary unit that keeps the figure at least 1 ("1023 B", "1.0 KiB").
std::string Bytes(double bytes, absl::string_view suffix) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t i = 0;
  double scaled = bytes;
  while (scaled >= 1024 && i + 1 < std::size(kUnits)) {
    scaled /= 1024;
    ++i;
  }
  return i == 0 ? absl::StrFormat("%.0f %s%s", scaled, kUnits[i], suffix)
                : absl::StrFormat("%.1f %s%s", scaled, kUnits[i], suffix);
}

}  // namespace

std::string FormatQuantity(double value, wire::SeriesUnit unit) {
  switch (unit) {
    case wire::SeriesUnit::kPercent:
      return absl::StrFormat("%.1f%%", value);
    case wire::SeriesUnit::kBytes:
      return Bytes(value, "");
    case wire::SeriesUnit::kBytesPerSecond:
      return Bytes(value, "/s");
    case wire::SeriesUnit::kPerSecond:
      return absl::StrFormat("%.1f/s", value);
    case wire::SeriesUnit::kNone:
      break;
  }
  return absl::StrFormat("%.6g", value);
}

void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& given) {
  // Cells hold what others wrote (names, log lines): no control character reaches the terminal.
  std::vector<std::vector<std::string>> rows = given;
  for (auto& row : rows) {
    for (std::string& cell : row) cell = EscapeControl(cell);
  }
  const size_t n = header.size();
  std::vector<size_t> widths(n, 0);
  std::vector<bool> numeric(n, !rows.empty());
  for (size_t i = 0; i < n; ++i) widths[i] = header[i].size();
  for (const auto& row : rows) {
    for (size_t i = 0; i < n && i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
      if (!row[i].empty() && row[i] != "-" && !IsNumberCell(row[i])) numeric[i] = false;
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
