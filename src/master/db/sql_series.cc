// SqlDatabase's metric time series (database.h): series by (trial, name, label) and their
// points, queried by range and downsampled in one streaming scan of the covering index, bucket
// by bucket, so that a million points are never held in memory to draw a chart.

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/internal/read_sql.h"
#include "master/db/sql_database.h"

namespace cohort::master {
namespace {

using sql::Query;
using sql::ReadAll;

using internal::kPointsInRange;
using internal::ReadPointsSql;

void BindRange(Query& s, int64_t series_id, const PointQuery& q) {
  s.BindInt64(1, series_id);
  s.BindInt64(2, q.min_batch.value_or(std::numeric_limits<int64_t>::min()));
  s.BindInt64(3, q.max_batch.value_or(std::numeric_limits<int64_t>::max()));
  s.BindDouble(4, q.min_time.value_or(-std::numeric_limits<double>::max()));
  s.BindDouble(5, q.max_time.value_or(std::numeric_limits<double>::max()));
  s.BindInt64(6, q.after_id);
}

PointRow ReadPoint(const Query& r, const PointQuery& q) {
  return PointRow{q.name, q.label, r.Int64(1), r.Double(2), r.Double(3), r.Int64(0)};
}

// The points of one downsampling bucket that a chart must show: its first and last (by batch)
// and its lowest and highest (by value).
class Bucket {
 public:
  void Add(PointRow p) {
    if (!used_) {
      first_ = last_ = low_ = high_ = p;
      used_ = true;
      return;
    }
    if (p.value < low_.value) low_ = p;
    if (p.value > high_.value) high_ = p;
    last_ = std::move(p);
  }
  // Appends the kept points in batch order, each once.
  void AppendTo(std::vector<PointRow>& out) const {
    if (!used_) return;
    std::vector<const PointRow*> kept = {&first_, &low_, &high_, &last_};
    std::sort(kept.begin(), kept.end(), [](const PointRow* a, const PointRow* b) {
      return a->batch != b->batch ? a->batch < b->batch : a->id < b->id;
    });
    for (size_t i = 0; i < kept.size(); ++i) {
      if (i == 0 || kept[i]->id != kept[i - 1]->id) out.push_back(*kept[i]);
    }
  }

 private:
  bool used_ = false;
  PointRow first_, last_, low_, high_;
};

// The id of the series (trial, name, label); nullopt when it does not exist.
absl::StatusOr<std::optional<int64_t>> FindSeries(sql::Connection& c, int64_t trial_id,
                                                  const std::string& name,
                                                  const std::string& label) {
  Query find(c, "find series",
             "SELECT id FROM series WHERE trial_id = ?1 AND name = ?2 AND label = ?3");
  find.BindInt64(1, trial_id);
  find.BindText(2, name);
  find.BindText(3, label);
  COHORT_ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return std::nullopt;
  return find.Int64(0);
}

}  // namespace

absl::StatusOr<int64_t> SqlDatabase::SeriesIdIn(sql::Connection& c, int64_t trial_id,
                                                const std::string& name, const std::string& label) {
  // Looked up first: a series is made once and then written to every report after.
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> known, FindSeries(c, trial_id, name, label));
  if (known) return *known;
  Query insert(c, "create series",
               "INSERT INTO series (trial_id, name, label) VALUES (?1, ?2, ?3) "
               "ON CONFLICT (trial_id, name, label) DO NOTHING");
  insert.BindInt64(1, trial_id);
  insert.BindText(2, name);
  insert.BindText(3, label);
  absl::Status created = insert.Run();
  if (insert.failure() == sql::Failure::kForeignKeyViolation) {
    return absl::NotFoundError(absl::StrCat("trial ", trial_id, " not found"));
  }
  COHORT_RETURN_IF_ERROR(created);
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> id, FindSeries(c, trial_id, name, label));
  if (!id) return absl::InternalError(absl::StrCat("series ", name, " vanished"));
  return *id;
}

absl::Status SqlDatabase::InsertPoints(int64_t trial_id, const std::vector<PointRow>& points) {
  if (points.empty()) return absl::OkStatus();
  return Transact([&](sql::Connection& c) { return InsertPointsIn(c, trial_id, points); });
}

absl::Status SqlDatabase::InsertMetricsAndPoints(int64_t trial_id,
                                                 const std::vector<MetricRow>& metrics,
                                                 const std::vector<PointRow>& points) {
  if (metrics.empty() && points.empty()) return absl::OkStatus();
  return Transact([&](sql::Connection& c) -> absl::Status {
    COHORT_RETURN_IF_ERROR(InsertMetricsIn(c, metrics));
    return InsertPointsIn(c, trial_id, points);
  });
}

absl::Status SqlDatabase::InsertPointsIn(sql::Connection& c, int64_t trial_id,
                                         const std::vector<PointRow>& points) {
  if (points.empty()) return absl::OkStatus();
  // The report's series in one read (its first report made them), then its points up to
  // sql::kRowsPerInsert per statement: two round trips for a report's points, not one per point.
  COHORT_ASSIGN_OR_RETURN(SeriesIds ids, KnownSeriesIn(c, trial_id, points));
  for (size_t first = 0; first < points.size(); first += sql::kRowsPerInsert) {
    const size_t n = std::min(sql::kRowsPerInsert, points.size() - first);
    Query s(c, "insert points",
            absl::StrCat("INSERT INTO series_points (series_id, batch, time, value) VALUES ",
                         sql::ValuesRows(n, 4)));
    for (size_t r = 0; r < n; ++r) {
      const PointRow& p = points[first + r];
      auto [it, added] = ids.try_emplace({p.name, p.label}, 0);
      if (added) {
        COHORT_ASSIGN_OR_RETURN(it->second, SeriesIdIn(c, trial_id, p.name, p.label));
      }
      const int base = static_cast<int>(4 * r);
      s.BindInt64(base + 1, it->second);
      s.BindInt64(base + 2, p.batch);
      s.BindDouble(base + 3, p.time);
      s.BindDouble(base + 4, p.value);
    }
    COHORT_RETURN_IF_ERROR(s.Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<SqlDatabase::SeriesIds> SqlDatabase::KnownSeriesIn(
    sql::Connection& c, int64_t trial_id, const std::vector<PointRow>& points) {
  std::set<std::string> names;
  for (const PointRow& p : points) names.insert(p.name);
  SeriesIds ids;
  std::vector<std::string> wanted(names.begin(), names.end());
  for (size_t first = 0; first < wanted.size(); first += sql::kMaxInList) {
    const size_t n = std::min(sql::kMaxInList, wanted.size() - first);
    Query s(c, "read a report's series",
            absl::StrCat("SELECT name, label, id FROM series WHERE trial_id = ?1 AND name IN (",
                         sql::Placeholders(2, n), ")"));
    s.BindInt64(1, trial_id);
    for (size_t i = 0; i < n; ++i) s.BindText(static_cast<int>(2 + i), wanted[first + i]);
    for (;;) {
      COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
      if (!has_row) break;
      ids.emplace(std::make_pair(s.Text(0), s.Text(1)), s.Int64(2));
    }
  }
  return ids;
}

absl::StatusOr<std::vector<SeriesRow>> SqlDatabase::ListSeries(int64_t trial_id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list series",
          "SELECT s.name, s.label, COUNT(p.id), COALESCE(MIN(p.batch), 0), "
          "COALESCE(MAX(p.batch), 0), COALESCE(MAX(p.time), 0), "
          "COALESCE((SELECT value FROM series_points WHERE series_id = s.id "
          "ORDER BY batch DESC, id DESC LIMIT 1), 0), COALESCE(MIN(p.value), 0), "
          "COALESCE(MAX(p.value), 0), COALESCE(AVG(p.value), 0) FROM series s "
          "LEFT JOIN series_points p ON p.series_id = s.id WHERE s.trial_id = ?1 "
          "GROUP BY s.id ORDER BY s.name, s.label");
  s.BindInt64(1, trial_id);
  return ReadAll<SeriesRow>(s, [](const Query& r) {
    return SeriesRow{r.Text(0),   r.Text(1),   r.Int64(2),  r.Int64(3),  r.Int64(4),
                     r.Double(5), r.Double(6), r.Double(7), r.Double(8), r.Double(9)};
  });
}

absl::StatusOr<std::vector<PointRow>> SqlDatabase::QueryPoints(const PointQuery& q) {
  if (q.max_points < 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_datapoints must be at least 4, got ", q.max_points));
  }
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> found,
                          FindSeries(*c, q.trial_id, q.name, q.label));
  if (!found) return std::vector<PointRow>{};
  const int64_t series_id = *found;

  Query extent(*c, "measure points",
               absl::StrCat("SELECT COUNT(*), MIN(batch), MAX(batch) FROM series_points "
                            "WHERE ",
                            kPointsInRange));
  BindRange(extent, series_id, q);
  COHORT_ASSIGN_OR_RETURN(bool has_row, extent.Step());
  const int64_t count = has_row ? extent.Int64(0) : 0;
  if (count <= q.max_points) {
    Query all(*c, "read points", ReadPointsSql());
    BindRange(all, series_id, q);
    return ReadAll<PointRow>(all, [&q](const Query& r) { return ReadPoint(r, q); });
  }
  // Too many: one scan of the range in batch order (the index's own order: no sort), cut into
  // max_points / 4 buckets of batches, each keeping its first, last, lowest and highest point.
  // One pass over a million points' index entries costs a fraction of the four grouped scans
  // SQLite would need (series_bench).
  const int64_t lo = extent.Int64(1), hi = extent.Int64(2);
  const double buckets = static_cast<double>(q.max_points / 4);
  Query s(*c, "downsample points", ReadPointsSql());
  BindRange(s, series_id, q);
  std::vector<PointRow> out;
  Bucket bucket;
  int64_t index = -1;
  for (;;) {
    COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
    if (!has_row) break;
    const int64_t at = static_cast<int64_t>(static_cast<double>(s.Int64(1) - lo) * buckets /
                                            static_cast<double>(hi - lo + 1));
    if (at != index) {
      bucket.AppendTo(out);
      bucket = Bucket{};
      index = at;
    }
    bucket.Add(ReadPoint(s, q));
  }
  bucket.AppendTo(out);
  return out;
}

}  // namespace cohort::master
