// ktune/fixed_string.hpp — a small constexpr string so instance names are built at compile time.
#pragma once
#include <cstddef>
#include <string_view>

namespace ktune {

template <std::size_t Capacity>
struct FixedString {
  char data[Capacity + 1] = {};
  std::size_t size = 0;

  constexpr FixedString& append(std::string_view s) {
    for (char ch : s)
      if (size < Capacity) data[size++] = ch;
    data[size] = '\0';
    return *this;
  }
  constexpr FixedString& append(char ch) { return append(std::string_view(&ch, 1)); }
  constexpr FixedString& append(long long v) {
    if (v < 0) {
      append('-');
      v = -v;
    }
    char buf[24] = {};
    int n = 0;
    do {
      buf[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) append(buf[--n]);
    return *this;
  }
  constexpr FixedString& append(int v) { return append(static_cast<long long>(v)); }
  constexpr std::string_view view() const { return {data, size}; }
  constexpr const char* c_str() const { return data; }
};

}  // namespace ktune
