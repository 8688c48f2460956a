#include "ember/error.h"
#include "ember/schema.h"
#include "harness.h"

using namespace ember;

EMBER_TEST(parses_and_prints_round_trip) {
  const char* texts[] = {
      "myops::scale_add(Tensor x, Tensor y, *, float alpha=1.0) -> Tensor",
      "aten::max(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor)",
      "aten::sum(Tensor self, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      "aten::pad(Tensor self, int[] pad, str mode='constant', float? value=None) -> Tensor",
      "ns::noop() -> ()",
      "ns::cat(Tensor[] tensors, int dim=0) -> Tensor",
      "aten::index(Tensor self, Tensor?[] indices) -> Tensor",
  };
  for (const char* t : texts) {
    Schema s = Schema::parse(t);
    CHECK_EQ(s.str(), std::string(t));
    CHECK_EQ(Schema::parse(s.str()).str(), s.str());
  }
  Schema s = Schema::parse(texts[0]);
  CHECK_EQ(s.qualified_name(), "myops::scale_add");
  CHECK_EQ(s.arguments.size(), 3u);
  CHECK(s.arguments[2].kwarg_only);
  CHECK_EQ(s.arguments[2].default_value->get<double>("alpha"), 1.0);
}

EMBER_TEST(rejects_bad_schemas_with_positions) {
  CHECK_THROWS(ValueError, Schema::parse("ns::f(Tensor x"), "expected ')'");
  CHECK_THROWS(ValueError, Schema::parse("ns::f(Tensr x) -> Tensor"), "not 'Tensr'");
  CHECK_THROWS(ValueError, Schema::parse("ns::f(Tensor x, Tensor x) -> Tensor"), "repeats");
  CHECK_THROWS(ValueError, Schema::parse("ns::f(int x=None) -> Tensor"), "optional");
  CHECK_THROWS(ValueError, Schema::parse("ns::f(int x=1.5) -> Tensor"), "integer default");
  CHECK_THROWS(ValueError, Schema::parse("ns::f(int x=1, int y) -> Tensor"), "before those with defaults");
  CHECK_THROWS(ValueError, Schema::parse("ns::f() -> Tensor junk junk"), "end of the schema");
  CHECK_THROWS(ValueError, Schema::parse("ns::f(int x=99999999999999999999) -> int"), "in range");
  CHECK_THROWS(ValueError, Schema::parse("ns::f(int?[] x) -> int"), "only of Tensor");
}
