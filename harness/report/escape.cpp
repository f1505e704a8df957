// Escaping for the markup formats.
#include "report/escape.hpp"

#include <cctype>

#include "io/json_io.hpp"

namespace attngate {

std::string markup_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
        switch (ch) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default:
            if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n') out += "\xEF\xBF\xBD";
            else out += ch;
        }
    }
    return out;
}

std::string markdown_cell(std::string_view s) {
    std::string out;
    for (const char ch : markup_escape(s)) {
        if (ch == '|' || ch == '`' || ch == '*' || ch == '_' || ch == '[' || ch == ']' || ch == '\\') out += '\\';
        out += ch == '\n' ? ' ' : ch;
    }
    return out;
}

std::string terminal_text(std::string_view s) {
    std::string out;
    for (const char ch : valid_utf8(s)) {
        if (ch == '\n') out += "\n    ";
        else if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f) out += "\xEF\xBF\xBD";
        else out += ch;
    }
    return out;
}

std::string upper(std::string s) {
    for (auto &ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
}

}  // namespace attngate
