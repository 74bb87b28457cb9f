#pragma once
// Status assertions and matchers for tests, the same in every folder (test-only; target
// cohort_testing_support):
//
//   EXPECT_OK(status_or_statusor);                 // prints the status when it is not OK
//   ASSERT_OK(status_or_statusor);
//   ASSERT_OK_AND_ASSIGN(auto value, MakeIt());    // returns from the test on an error
//   EXPECT_THAT(status, StatusIs(absl::StatusCode::kNotFound));
//   EXPECT_THAT(status_or, StatusIs(absl::StatusCode::kNotFound, HasSubstr("trial 7")));
//   EXPECT_THAT(status_or, StatusIs(absl::StatusCode::kNotFound, "trial 7 not found"));  // equal
//   EXPECT_THAT(status_or, IsOkAndHolds(ElementsAre(1, 2)));
//   EXPECT_THAT(status, IsOk());
//
// StatusIs, IsOk and IsOkAndHolds take an absl::Status or an absl::StatusOr<T> alike. They live
// in cohort::testing_support (not cohort::testing, which would hide ::testing from code inside
// namespace cohort): `using ::cohort::testing_support::StatusIs;`.

#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::testing_support {
namespace internal {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

// The predicate formatter behind EXPECT_OK / ASSERT_OK: evaluates its argument once and prints
// the expression and the status when it is not OK.
struct IsOkFormatter {
  ::testing::AssertionResult operator()(const char* text, const absl::Status& status) const {
    if (status.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << text << " is not OK: " << status;
  }
  template <typename T>
  ::testing::AssertionResult operator()(const char* text, const absl::StatusOr<T>& value) const {
    return (*this)(text, value.status());
  }
};

// StatusIs: the code and the message matched separately, for Status and StatusOr<T>.
class StatusIsCommon {
 public:
  StatusIsCommon(::testing::Matcher<absl::StatusCode> code,
                 ::testing::Matcher<const std::string&> message)
      : code_(std::move(code)), message_(std::move(message)) {}

  void DescribeTo(std::ostream* os) const {
    *os << "has a status code that ";
    code_.DescribeTo(os);
    *os << ", and has a message that ";
    message_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "has a status code that ";
    code_.DescribeNegationTo(os);
    *os << ", or has a message that ";
    message_.DescribeNegationTo(os);
  }
  bool MatchAndExplain(const absl::Status& status, ::testing::MatchResultListener* listener) const {
    *listener << "which is " << status;
    ::testing::StringMatchResultListener inner;
    if (!code_.MatchAndExplain(status.code(), &inner)) {
      *listener << ", whose code is wrong";
      if (!inner.str().empty()) *listener << " (" << inner.str() << ")";
      return false;
    }
    const std::string message(status.message());
    if (!message_.MatchAndExplain(message, &inner)) {
      *listener << ", whose message is wrong";
      if (!inner.str().empty()) *listener << " (" << inner.str() << ")";
      return false;
    }
    return true;
  }

 private:
  ::testing::Matcher<absl::StatusCode> code_;
  ::testing::Matcher<const std::string&> message_;
};

template <typename T>  // T: const absl::Status& or const absl::StatusOr<U>&
class MonoStatusIs : public ::testing::MatcherInterface<T> {
 public:
  explicit MonoStatusIs(StatusIsCommon common) : common_(std::move(common)) {}
  void DescribeTo(std::ostream* os) const override { common_.DescribeTo(os); }
  void DescribeNegationTo(std::ostream* os) const override { common_.DescribeNegationTo(os); }
  bool MatchAndExplain(T actual, ::testing::MatchResultListener* listener) const override {
    return common_.MatchAndExplain(GetStatus(actual), listener);
  }

 private:
  StatusIsCommon common_;
};

class StatusIsMatcher {
 public:
  StatusIsMatcher(::testing::Matcher<absl::StatusCode> code,
                  ::testing::Matcher<const std::string&> message)
      : common_(std::move(code), std::move(message)) {}

  template <typename T>
  operator ::testing::Matcher<T>() const {  // NOLINT: implicit, as gmock's polymorphic matchers
    return ::testing::Matcher<T>(new MonoStatusIs<const T&>(common_));
  }

 private:
  StatusIsCommon common_;
};

// IsOk: a matcher form of EXPECT_OK, for Not(IsOk()), Each(IsOk()) and the like.
class IsOkMatcher {
 public:
  template <typename T>
  operator ::testing::Matcher<T>() const {  // NOLINT
    return ::testing::Matcher<T>(new Mono<const T&>());
  }

 private:
  template <typename T>
  class Mono : public ::testing::MatcherInterface<T> {
   public:
    void DescribeTo(std::ostream* os) const override { *os << "is OK"; }
    void DescribeNegationTo(std::ostream* os) const override { *os << "is not OK"; }
    bool MatchAndExplain(T actual, ::testing::MatchResultListener* listener) const override {
      const absl::Status& status = GetStatus(actual);
      if (!status.ok()) *listener << "which is " << status;
      return status.ok();
    }
  };
};

// IsOkAndHolds: an OK StatusOr<T> whose value matches the inner matcher.
template <typename StatusOrRef>  // const absl::StatusOr<U>&
class MonoIsOkAndHolds : public ::testing::MatcherInterface<StatusOrRef> {
 public:
  using Value = typename std::decay_t<StatusOrRef>::value_type;

  template <typename InnerMatcher>
  explicit MonoIsOkAndHolds(InnerMatcher&& inner)
      : inner_(::testing::SafeMatcherCast<const Value&>(std::forward<InnerMatcher>(inner))) {}

  void DescribeTo(std::ostream* os) const override {
    *os << "is OK and has a value that ";
    inner_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "is not OK, or has a value that ";
    inner_.DescribeNegationTo(os);
  }
  bool MatchAndExplain(StatusOrRef actual, ::testing::MatchResultListener* listener) const override {
    if (!actual.ok()) {
      *listener << "which has status " << actual.status();
      return false;
    }
    ::testing::StringMatchResultListener inner;
    const bool matches = inner_.MatchAndExplain(*actual, &inner);
    *listener << "which holds " << ::testing::PrintToString(*actual);
    if (!inner.str().empty()) *listener << ", " << inner.str();
    return matches;
  }

 private:
  ::testing::Matcher<const Value&> inner_;
};

template <typename InnerMatcher>
class IsOkAndHoldsMatcher {
 public:
  explicit IsOkAndHoldsMatcher(InnerMatcher inner) : inner_(std::move(inner)) {}

  template <typename StatusOrType>
  operator ::testing::Matcher<StatusOrType>() const {  // NOLINT
    return ::testing::Matcher<StatusOrType>(new MonoIsOkAndHolds<const StatusOrType&>(inner_));
  }

 private:
  InnerMatcher inner_;
};

}  // namespace internal

// An absl::Status or absl::StatusOr<T> whose code matches `code` (a code or a matcher of one).
inline internal::StatusIsMatcher StatusIs(::testing::Matcher<absl::StatusCode> code) {
  return internal::StatusIsMatcher(std::move(code), ::testing::A<const std::string&>());
}

// ... and whose message matches `message`: a string (equality) or a string matcher (HasSubstr).
template <typename MessageMatcher>
internal::StatusIsMatcher StatusIs(::testing::Matcher<absl::StatusCode> code,
                                   MessageMatcher message) {
  return internal::StatusIsMatcher(
      std::move(code), ::testing::MatcherCast<const std::string&>(std::move(message)));
}

// An OK absl::Status or absl::StatusOr<T>.
inline internal::IsOkMatcher IsOk() { return internal::IsOkMatcher(); }

// An OK absl::StatusOr<T> whose value matches `inner` (a value or a matcher).
template <typename InnerMatcher>
internal::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>> IsOkAndHolds(InnerMatcher&& inner) {
  return internal::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>>(
      std::forward<InnerMatcher>(inner));
}

}  // namespace cohort::testing_support

// EXPECT_OK(expr) / ASSERT_OK(expr): expr (an absl::Status or absl::StatusOr<T>, evaluated once)
// is OK; otherwise the failure names the expression and prints the status. Messages stream on:
// EXPECT_OK(Save(x)) << "saving " << x;
#define EXPECT_OK(expr) \
  EXPECT_PRED_FORMAT1(::cohort::testing_support::internal::IsOkFormatter(), expr)
#define ASSERT_OK(expr) \
  ASSERT_PRED_FORMAT1(::cohort::testing_support::internal::IsOkFormatter(), expr)

// ASSERT_OK_AND_ASSIGN(lhs, expr): evaluates expr (an absl::StatusOr<T>); on an error fails the
// test and returns from the current function, printing the status; otherwise moves the value
// into lhs, which may declare a variable: ASSERT_OK_AND_ASSIGN(auto db, OpenDatabase(path));
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                                         \
  COHORT_TESTING_ASSERT_OK_AND_ASSIGN_IMPL_(                                                    \
      COHORT_TESTING_CONCAT_(cohort_testing_status_or_, __LINE__), lhs, expr)
#define COHORT_TESTING_ASSERT_OK_AND_ASSIGN_IMPL_(status_or, lhs, expr)                         \
  auto status_or = (expr);                                                                      \
  ASSERT_TRUE(status_or.ok()) << #expr << " is not OK: " << status_or.status();                 \
  lhs = std::move(status_or).value()
#define COHORT_TESTING_CONCAT_(a, b) COHORT_TESTING_CONCAT_INNER_(a, b)
#define COHORT_TESTING_CONCAT_INNER_(a, b) a##b
