// JUnit XML reporter: one test case per case x kernel x check, grouped in one test suite
// per check, so GitLab, Jenkins and GitHub test views show the gate's findings.
#pragma once

#include <string>

#include "results/results.hpp"

namespace attngate {

/// Valid JUnit XML: testcase name "case / kernel", classname "attngate.<suite>.<check>",
/// a <failure> carrying the reason and the key numbers, <skipped> for a skip. Workloads
/// with a verdict become test cases of "attngate.<suite>.workload".
std::string junit_serialize(const RunResults &r);

}  // namespace attngate
