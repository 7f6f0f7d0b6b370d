// A dataset version's key in the head's catalog, and the text that names one: "NAME@VERSION"
// (names and versions are letters, digits, '-', '_' and '.': never '@'). "NAME" alone names
// every version of NAME (docs/datasets.md, "Datasets and versions").
#pragma once

#include <utility>

#include <string>

namespace corral {

std::string DatasetKey(const std::string& name, const std::string& version);
// "NAME@VERSION" -> {NAME, VERSION}; "NAME" -> {NAME, ""}.
std::pair<std::string, std::string> SplitDatasetKey(const std::string& text);
// The source a dataset is fetched from, as the head measures and budgets it: a URL's scheme,
// host and port ("https://store.example:443"); a path's directory that holds it
// ("/shared/imagenet" and "/shared/cifar.tar" are both from "/shared").
std::string DatasetSourceKey(const std::string& source);

}  // namespace corral
