// The timing server behind `attngate time --serve` (protocol in time_server.hpp).
#include "run/time_server.hpp"

#include <cerrno>
#include <cmath>
#include <string>

#include <unistd.h>

#include "io/json_io.hpp"
#include "stats/stats.hpp"

namespace attngate {

namespace {

Result<void> reply(int fd, const json::value &v) {
    const std::string line = json::serialize(v) + "\n";
    for (size_t done = 0; done < line.size();) {
        const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return fail(ErrorKind::Infra, "cannot answer a timing request: the requester went away");
        done += static_cast<size_t>(n);
    }
    return {};
}

struct Request {
    std::vector<size_t> rows;
    int repetitions = 1;
    double min_time_s = 0.02;
};

Result<Request> parse_request(const std::string &line, size_t n_rows) {
    auto doc = parse_json(line, "timing request");
    if (!doc) return std::unexpected(doc.error());
    ObjectReader r(*doc, "timing request", "$");
    Request q;
    q.repetitions = static_cast<int>(r.integer("repetitions", 1, 1, 10000));
    q.min_time_s = r.number("min_time_s", 0.02);
    for (int64_t i : r.integer_array("rows", {})) {
        if (i < 0 || static_cast<size_t>(i) >= n_rows) {
            r.fail_at("rows", fmt::format("expected row indices below {}", n_rows));
            break;
        }
        q.rows.push_back(static_cast<size_t>(i));
    }
    if (r.ok() && !(q.min_time_s >= 0 && q.min_time_s <= 60)) r.fail_at("min_time_s", "expected 0 to 60 seconds");
    if (auto e = r.finish()) return std::unexpected(*e);
    return q;
}

}  // namespace

Result<void> serve_timing(PlanTimer &timer, const TimingRequest &base, std::FILE *in, int reply_fd) {
    json::array rows;
    for (const auto &[c, k] : timer.labels()) rows.push_back(json::array{json::string(c), json::string(k)});
    if (auto w = reply(reply_fd, json::object{{"rows", std::move(rows)}}); !w) return w;
    std::vector<double> per_call(timer.size(), 0.0);  // 0: not timed yet
    std::string line;
    for (int ch; (ch = std::fgetc(in)) != EOF;) {
        if (ch != '\n') {
            line += static_cast<char>(ch);
            continue;
        }
        auto q = parse_request(line, timer.size());
        line.clear();
        if (!q) {
            if (auto w = reply(reply_fd, json::object{{"error", q.error().message}}); !w) return w;
            continue;
        }
        TimingRequest req = base;
        req.repetitions = q->repetitions;
        req.min_time_s = q->min_time_s;
        for (size_t i : q->rows)
            req.iterations.push_back(per_call[i] > 0 ? std::max<int64_t>(1, std::llround(q->min_time_s / per_call[i])) : 0);
        auto got = timer.time(req, q->rows);
        if (!got) {
            if (auto w = reply(reply_fd, json::object{{"error", got.error().message}}); !w) return w;
            continue;
        }
        json::array samples;
        for (size_t j = 0; j < got->size(); ++j) {
            const auto &s = (*got)[j].samples_s;
            if (!s.empty()) per_call[q->rows[j]] = median(s);
            samples.push_back(json::array(s.begin(), s.end()));
        }
        if (auto w = reply(reply_fd, json::object{{"samples_s", std::move(samples)}}); !w) return w;
    }
    return {};
}

}  // namespace attngate
