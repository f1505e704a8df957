// Escaping for the markup formats.
#include "report/escape.hpp"

#include <cctype>
#include <vector>

#include "io/json_io.hpp"

namespace attngate {

std::string markup_escape(std::string_view s, bool quotes) {
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
        switch (ch) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += quotes ? "&quot;" : "\""; break;
        case '\'': out += quotes ? "&#39;" : "'"; break;
        default:
            if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n') out += "\xEF\xBF\xBD";
            else out += ch;
        }
    }
    return out;
}

std::string markdown_cell(std::string_view s) {
    std::string out;
    for (const char ch : markup_escape(s, /*quotes=*/false)) {  // text, never an attribute: quotes stay readable
        // "@octocat" or "@org/team" would notify them when the summary is posted as a PR
        // comment; a zero-width space after '@' keeps the text and drops the mention.
        if (ch == '@') {
            out += "@&#8203;";
            continue;
        }
        if (ch == '|' || ch == '`' || ch == '*' || ch == '_' || ch == '[' || ch == ']' || ch == '\\') out += '\\';
        out += ch == '\n' ? ' ' : ch;
    }
    return out;
}

std::string fit_columns(const std::string &s, size_t width) {
    std::vector<size_t> starts;  // byte offset of each code point
    for (size_t i = 0; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) starts.push_back(i);
    if (starts.size() <= width || width == 0) return starts.size() <= width ? s : std::string();
    const size_t tail = (width - 1) / 2, head = width - 1 - tail;
    return s.substr(0, starts[head]) + "…" + (tail ? s.substr(starts[starts.size() - tail]) : std::string());
}

std::string terminal_text(std::string_view s) {
    std::string out;
    const std::string text = valid_utf8(s);
    for (size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        // C1 controls (U+0080-U+009F, "\xC2\x9B" is CSI) move a terminal's cursor like ESC does.
        const bool c1 = static_cast<unsigned char>(ch) == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xA0;
        if (ch == '\n') out += "\n    ";
        else if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f || c1) out += "\xEF\xBF\xBD", i += c1;
        else out += ch;
    }
    return out;
}

std::string upper(std::string s) {
    for (auto &ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
}

}  // namespace attngate
