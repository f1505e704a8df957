// Typed records to and from JSON through their Boost.Describe member lists, so that a
// record's fields are named once (in the struct) and every file reader checks them alike.
// Written: fields in declaration order, an empty std::optional left out, a non-finite
// double as null. Read: each present field's type checked, a wrong one an error naming the
// file and the JSON path; keys no field names go to an open map when one is given.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/describe.hpp>
#include <boost/mp11.hpp>

#include "io/error.hpp"
#include "io/json_io.hpp"

namespace attngate {

/// A struct whose members are listed by BOOST_DESCRIBE_STRUCT.
template <class T>
concept Described = boost::describe::has_describe_members<T>::value;

/// An enum with a name table: an overload `enum_names(E)` returning pairs {value, name}.
template <class E>
concept NamedEnum = std::is_enum_v<E> && requires { enum_names(E{}); };

template <NamedEnum E>
const char *enum_name(E e) {
    for (const auto &[v, n] : enum_names(E{}))
        if (v == e) return n;
    return "?";
}

template <NamedEnum E>
std::optional<E> parse_enum(std::string_view s) {
    for (const auto &[v, n] : enum_names(E{}))
        if (s == n) return v;
    return std::nullopt;
}

namespace described {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class>
inline constexpr bool dependent_false = false;

template <class T>
using members = boost::describe::describe_members<T, boost::describe::mod_public>;

template <class T>
bool is_member_name(std::string_view key) {
    bool found = false;
    boost::mp11::mp_for_each<members<T>>([&](auto d) { found = found || key == d.name; });
    return found;
}

template <class T>
json::value to_value(const T &v);

}  // namespace described

/// Every present field of a described record, in declaration order.
template <Described T>
json::object to_json_object(const T &t) {
    json::object o;
    boost::mp11::mp_for_each<described::members<T>>([&](auto d) {
        const auto &m = t.*d.pointer;
        using M = std::remove_cvref_t<decltype(m)>;
        if constexpr (described::is_optional<M>::value) {
            if (m) o.emplace(d.name, described::to_value(*m));
        } else {
            o.emplace(d.name, described::to_value(m));
        }
    });
    return o;
}

namespace described {

template <class T>
json::value to_value(const T &v) {
    if constexpr (std::is_same_v<T, bool>) return json::value(v);
    else if constexpr (std::is_floating_point_v<T>) return std::isfinite(v) ? json::value(v) : json::value(nullptr);
    else if constexpr (std::is_integral_v<T>) return json::value(v);
    else if constexpr (std::is_same_v<T, std::string>) return json::value(json::string(v));
    else if constexpr (NamedEnum<T>) return json::value(enum_name(v));
    else if constexpr (is_optional<T>::value) return v ? to_value(*v) : json::value(nullptr);
    else if constexpr (is_vector<T>::value) {
        json::array a;
        a.reserve(v.size());
        for (const auto &e : v) a.push_back(to_value(e));
        return a;
    } else if constexpr (std::is_same_v<T, json::object>) return json::value(v);
    else if constexpr (Described<T>) return json::value(to_json_object(v));
    else static_assert(dependent_false<T>, "no JSON form for this field type");
}

inline std::optional<Error> wrong(const std::string &file, const std::string &path, std::string_view expected, const json::value &got) {
    return Error{ErrorKind::BadInput, fmt::format("{}: {}: expected {}, got {}", file, path, expected, json_kind_name(got))};
}

template <class T>
std::optional<Error> from_value(const json::value &v, T &out, const std::string &file, const std::string &path, bool field);

template <Described T>
std::optional<Error> read_object(const json::object &o, T &out, const std::string &file, const std::string &path, json::object *extras);

template <class T>
std::optional<Error> read_integer(const json::value &v, T &out, const std::string &file, const std::string &path) {
    if (v.is_int64() && std::in_range<T>(v.get_int64())) out = static_cast<T>(v.get_int64());
    else if (v.is_uint64() && std::in_range<T>(v.get_uint64())) out = static_cast<T>(v.get_uint64());
    else if (v.is_int64() || v.is_uint64())
        return Error{ErrorKind::BadInput, fmt::format("{}: {}: expected an integer in [{}, {}], got {}", file, path,
                                                      std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), json::serialize(v))};
    else return wrong(file, path, "an integer", v);
    return std::nullopt;
}

/// `field`: v is a record's field itself, where a number may be null (not measured); an
/// element of an array of seconds may not.
template <class T>
std::optional<Error> from_value(const json::value &v, T &out, const std::string &file, const std::string &path, bool field) {
    if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_bool()) return wrong(file, path, "true or false", v);
        out = v.get_bool();
    } else if constexpr (std::is_floating_point_v<T>) {
        if (field && v.is_null()) out = std::numeric_limits<T>::quiet_NaN();
        else if (v.is_number()) out = v.to_number<T>();
        else return wrong(file, path, field ? "a number or null" : "a number", v);
    } else if constexpr (std::is_integral_v<T>) {
        return read_integer(v, out, file, path);
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (!v.is_string()) return wrong(file, path, "a string", v);
        out = std::string(v.get_string());
    } else if constexpr (NamedEnum<T>) {
        std::string names;
        for (const auto &[e, n] : enum_names(T{})) names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", n);
        const auto e = v.is_string() ? parse_enum<T>(v.get_string()) : std::nullopt;
        if (!e) return Error{ErrorKind::BadInput, fmt::format("{}: {}: expected one of {}, got {}", file, path, names, json::serialize(v))};
        out = *e;
    } else if constexpr (is_optional<T>::value) {  // a value that may be null
        if (v.is_null()) out.reset();
        else {
            typename T::value_type x{};
            if (auto e = from_value(v, x, file, path, false)) return e;
            out = std::move(x);
        }
    } else if constexpr (is_vector<T>::value) {
        if (!v.is_array()) return wrong(file, path, "an array", v);
        out.clear();
        const json::array &a = v.get_array();
        for (size_t i = 0; i < a.size(); ++i) {
            typename T::value_type x{};
            if (auto e = from_value(a[i], x, file, fmt::format("{}[{}]", path, i), false)) return e;
            out.push_back(std::move(x));
        }
    } else if constexpr (std::is_same_v<T, json::object>) {
        if (!v.is_object()) return wrong(file, path, "an object", v);
        out = v.get_object();
    } else if constexpr (Described<T>) {
        if (!v.is_object()) return wrong(file, path, "an object", v);
        return read_object(v.get_object(), out, file, path, nullptr);
    } else {
        static_assert(dependent_false<T>, "no JSON form for this field type");
    }
    return std::nullopt;
}

/// Reads the fields of `o` into `out`; keys no field names go to `extras`, or without one
/// are an unknown-field error.
template <Described T>
std::optional<Error> read_object(const json::object &o, T &out, const std::string &file, const std::string &path, json::object *extras) {
    std::optional<Error> err;
    boost::mp11::mp_for_each<members<T>>([&](auto d) {
        const json::value *v = err ? nullptr : o.if_contains(d.name);
        if (!v) return;
        auto &m = out.*d.pointer;
        using M = std::remove_cvref_t<decltype(m)>;
        const std::string at = fmt::format("{}.{}", path, d.name);
        if constexpr (is_optional<M>::value) {
            typename M::value_type x{};
            err = from_value(*v, x, file, at, true);
            if (!err) m = std::move(x);
        } else {
            err = from_value(*v, m, file, at, true);
        }
    });
    if (err) return err;
    for (const auto &kv : o) {
        if (is_member_name<T>(kv.key())) continue;
        if (!extras) {
            std::string fields;
            boost::mp11::mp_for_each<members<T>>([&](auto d) { fields += fmt::format("{}{}", fields.empty() ? "" : ", ", d.name); });
            return Error{ErrorKind::BadInput,
                         fmt::format("{}: {}.{}: unknown field (expected one of: {})", file, path, std::string_view(kv.key()), fields)};
        }
        extras->emplace(kv.key(), kv.value());
    }
    return std::nullopt;
}

constexpr bool same_name(const char *a, const char *b) { return std::string_view(a) == std::string_view(b); }

/// Whether From has a member named like To's member `D`, of the same type.
template <class From, class D, class ToMember>
constexpr bool has_matching_member() {
    bool found = false;
    boost::mp11::mp_for_each<members<From>>([&](auto f) {
        using FromMember = std::remove_cvref_t<decltype(std::declval<From>().*f.pointer)>;
        if (same_name(f.name, D::name) && std::is_same_v<FromMember, ToMember>) found = true;
    });
    return found;
}

}  // namespace described

namespace described {
template <class M, class T>
M record_of(T M::*);
}  // namespace described

/// The record type of a member pointer: GoldenMetrics for &GoldenMetrics::margin.
template <auto Field>
using record_of_t = decltype(described::record_of(Field));

/// The JSON name of a described member, e.g. "margin" for &GoldenMetrics::margin.
template <auto Field>
const char *field_name() {
    const char *name = "?";
    boost::mp11::mp_for_each<described::members<record_of_t<Field>>>([&](auto d) {
        if constexpr (std::is_same_v<std::remove_cv_t<decltype(d.pointer)>, std::remove_cv_t<decltype(Field)>>)
            if (d.pointer == Field) name = d.name;
    });
    return name;
}

/// A record's fields read from a JSON object (see read_object).
template <Described T>
std::optional<Error> from_json_object(const json::object &o, T &out, const std::string &file, const std::string &path,
                                      json::object *extras = nullptr) {
    return described::read_object(o, out, file, path, extras);
}

/// To's fields copied from the members of `from` with the same names, e.g. the part of a
/// check's metrics that its baseline keeps. Every member of To must have a namesake of the
/// same type in From (checked at compile time), so the two cannot drift apart.
template <Described To, Described From>
To copy_namesakes(const From &from) {
    To to{};
    boost::mp11::mp_for_each<described::members<To>>([&](auto d) {
        using D = decltype(d);
        auto &target = to.*d.pointer;
        using ToMember = std::remove_cvref_t<decltype(target)>;
        static_assert(described::has_matching_member<From, D, ToMember>(), "a field without a namesake of the same type");
        boost::mp11::mp_for_each<described::members<From>>([&](auto f) {
            using FromMember = std::remove_cvref_t<decltype(from.*f.pointer)>;
            if constexpr (std::is_same_v<FromMember, ToMember>)
                if (described::same_name(f.name, d.name)) target = from.*f.pointer;
        });
    });
    return to;
}

}  // namespace attngate
