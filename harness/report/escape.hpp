// Escaping of input strings for the markup formats (HTML, SVG, XML, Markdown) and the terminal.
#pragma once

#include <string>
#include <string_view>

namespace attngate {

/// & < > " ' as entities: safe in HTML/XML text and quoted attributes. Control
/// characters other than tab and newline (invalid in XML 1.0) become U+FFFD. Without
/// `quotes`, " and ' stay as they are: for text that is never inside an attribute.
std::string markup_escape(std::string_view s, bool quotes = true);

/// For Markdown (a table cell, a list item): markup escaped, '|', '`' and emphasis escaped,
/// newlines as spaces, and @mentions neutralised so that a PR comment pings nobody.
std::string markdown_cell(std::string_view s);

/// For the console: valid UTF-8, control characters (escape sequences, carriage returns)
/// as U+FFFD, and every line after the first indented, so that text from a kernel or an
/// input file can neither move the cursor nor print a line that looks like the verdict.
std::string terminal_text(std::string_view s);

/// `s` in at most `width` columns (code points): a longer one keeps its head and its tail (where
/// case ids differ, e.g. "…-page16") around "…", so that a table's next column, or a live line
/// within the terminal's width, stays in place. The full text is in results.json.
std::string fit_columns(const std::string &s, size_t width);

/// ASCII upper case (a verdict's name as the reports shout it: PASS, FAIL).
std::string upper(std::string s);

}  // namespace attngate
