// What the application threads and the collector share: the list of thread
// buffers and the user-defined event types.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "thread_buffer.hpp"
#include "tinescope/format.hpp"

namespace tinescope::rec {

struct Registry {
  // Push-only list (new buffers go to the front with a CAS); buffers are
  // never freed, a Free one is taken again by the next new thread.
  std::atomic<ThreadBuffer*> buffers{nullptr};

  std::mutex types_mutex;                        // set-up path only
  std::vector<format::EventTypeDef> user_types;  // code = kFirstUserType + index
  std::atomic<uint32_t> types_count{0};          // published size of user_types
  uint8_t field_counts[format::kMaxEventType + 1 - format::kFirstUserType] = {};  // read without the lock

  // ts_category_name: each category bit's name ("" unnamed), under
  // types_mutex; the version tells the collector to read them again.
  std::string category_names[64];
  std::atomic<uint32_t> category_names_version{0};
};

Registry& registry();

}  // namespace tinescope::rec
