// A table of entries found by name (support layer): the built-in entries first, then those added
// at run time, in order. Entries are never removed or moved, so pointers to them stay valid for
// the process's life. The transport registry and the executor table are NamedTables.
// Thread-safe.
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus {

// `Entry` has a `std::string name`.
template <typename Entry>
class NamedTable {
 public:
  // `kind` names an entry in messages ("transport", "executor").
  NamedTable(std::string kind, std::deque<Entry> builtins)
      : kind_(std::move(kind)), entries_(std::move(builtins)) {}

  std::vector<const Entry*> list() const {
    std::lock_guard lock(mutex_);
    std::vector<const Entry*> entries;
    entries.reserve(entries_.size());
    for (const Entry& entry : entries_)
      entries.push_back(&entry);
    return entries;
  }

  // The entry named `name`, or nullptr.
  const Entry* find(std::string_view name) const {
    std::lock_guard lock(mutex_);
    return findLocked(name);
  }

  // Appends `entry`. OptionError, naming `caller` ("registerTransport"), if its name is empty or
  // taken.
  void add(Entry entry, std::string_view caller) {
    if (entry.name.empty())
      throw OptionError(fmt::format("{}: the {} needs a name", caller, kind_));
    std::lock_guard lock(mutex_);
    if (findLocked(entry.name) != nullptr)
      throw OptionError(fmt::format("{}: {} {} named '{}' is registered already", caller,
                                    startsWithVowel(kind_) ? "an" : "a", kind_, entry.name));
    entries_.push_back(std::move(entry));
  }

  // Appends `entry` unless an entry has its name; true if it was appended. OptionError as add()
  // for an empty name.
  bool addIfAbsent(Entry entry, std::string_view caller) {
    if (entry.name.empty())
      throw OptionError(fmt::format("{}: the {} needs a name", caller, kind_));
    std::lock_guard lock(mutex_);
    if (findLocked(entry.name) != nullptr) return false;
    entries_.push_back(std::move(entry));
    return true;
  }

 private:
  const Entry* findLocked(std::string_view name) const {
    for (const Entry& entry : entries_)
      if (entry.name == name) return &entry;
    return nullptr;
  }

  static bool startsWithVowel(std::string_view word) {
    return !word.empty() && std::string_view("aeiou").find(word.front()) != std::string_view::npos;
  }

  const std::string kind_;
  mutable std::mutex mutex_;
  std::deque<Entry> entries_;  // a deque: appending never moves an entry
};

}  // namespace chorus
