#pragma once
// TOML literals for the cache writer. Writing is ours (to keep DESIGN.md's field order); reading
// is toml++'s. Every literal produced here parses back to the same value.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <string_view>

#include <toml++/toml.h>

#include "onnx_light/runtime/tuning_value.h"

namespace onnx_light::tune {

// A TOML basic string with escapes: "a\"b".
std::string toml_quote(std::string_view text);
// int64 as is, double always with a fraction or exponent (1.0, 1e+20, inf, nan), bool, string.
std::string toml_value_literal(const runtime::TuningValue& value);
// True for exactly the text format_date_time in cache_file.cc produces (valid calendar date and
// time, optional fraction without trailing zeros, optional Z or +HH:MM), which can be written bare.
bool is_canonical_date_time(std::string_view text);
// The instant an RFC 3339 date-time of that shape names, as (seconds since 1970-01-01T00:00:00Z,
// nanoseconds), so that provenance.written compares across offsets (`--on-conflict newest`); a
// local date-time (no offset) counts as UTC. nullopt for any other text.
std::optional<std::pair<int64_t, int32_t>> date_time_instant(std::string_view text);
// True when `text` is well-formed UTF-8 (TOML documents must be).
bool is_valid_utf8(std::string_view text);
// A short rendering of a node for messages.
std::string toml_value_text(const toml::node& node);

}  // namespace onnx_light::tune
