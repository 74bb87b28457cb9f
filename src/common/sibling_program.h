#pragma once
// SiblingProgram: a Cohort program installed next to the running executable (cohort-launch
// next to cohort or cohort-agent, cohort-master next to cohort), else its bare name for a PATH
// lookup. Thread-safe (reads /proc/self/exe).

#include <string>

namespace cohort {

std::string SiblingProgram(const std::string& name);

}  // namespace cohort
