#include "sim/request/request_log.h"

namespace kvfleet::sim {

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPending:
      return "pending";
    case Outcome::kOk:
      return "ok";
    case Outcome::kRejected:
      return "rejected";
    case Outcome::kTimedOut:
      return "timed_out";
    case Outcome::kCancelled:
      return "cancelled";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kUnfinished:
      return "unfinished";
  }
  return "?";
}

std::string_view reject_reason_name(RejectReason r) {
  switch (r) {
    case RejectReason::kNone:
      return "";
    case RejectReason::kExceedsMaxModelLen:
      return "exceeds_max_model_len";
    case RejectReason::kExceedsKvCapacity:
      return "exceeds_kv_capacity";
    case RejectReason::kExceedsBatchedTokens:
      return "exceeds_max_num_batched_tokens";
    case RejectReason::kContextOverflow:
      return "context_overflow";
    case RejectReason::kShed:
      return "shed";
    case RejectReason::kQueueFull:
      return "queue_full";
    case RejectReason::kQueueTimeout:
      return "queue_timeout";
  }
  return "?";
}

}  // namespace kvfleet::sim
