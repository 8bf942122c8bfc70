#!/usr/bin/env python3
"""The scan's option matrix (shardproof_recipes.covering) and the option rules
of recipes, on recipes made up here: every pair of values of two factors
that an allowed row holds is in some row, the defaults come first, rows
repeat nothing, and a recipe's options are refused when not declared."""
import itertools
import os
import random
import sys
import types
import unittest

RUNTIME = os.path.join(os.path.dirname(__file__), "..", "..", "frontend", "python", "runtime")
sys.path.insert(0, os.path.abspath(RUNTIME))
sys.modules.setdefault("torch", types.ModuleType("torch"))  # only its distributed API is used
import shardproof_recipes as recipes  # noqa: E402


def recipe_with(**choices):
    @recipes.options(**choices)
    def recipe():
        return {name: recipes.option(name) for name in choices}
    return recipe


def rows_of(recipe, layouts, allowed=None):
    """covering's rows as (layout, {option: value}) with defaults filled in."""
    rows = []
    for name, text in recipes.covering(recipe, layouts, allowed):
        assert name == "recipe"
        parsed = recipes.parse(text)
        axes = ",".join(item for item in text.split(",")
                        if item.partition("=")[0] in recipes.AXES + ("sp",))
        values = {k: v[0] for k, v in recipe.options.items()}
        values.update(parsed.options)
        rows.append((axes, values))
    return rows


class Covering(unittest.TestCase):
    def assert_pairwise(self, recipe, layouts, allowed=None):
        rows = rows_of(recipe, layouts, allowed)
        names = list(recipe.options)
        factors = [list(layouts)] + [list(recipe.options[n]) for n in names]
        as_tuples = [(layout, *[values[n] for n in names]) for layout, values in rows]
        self.assertEqual(len(set(as_tuples)), len(as_tuples), "a row repeats")
        possible = [row for row in itertools.product(*factors)
                    if allowed is None or allowed(recipes.parse(row[0]),
                                                  dict(zip(names, row[1:])))]
        self.assertEqual(as_tuples[0], possible[0], "the first allowed row is not first")
        for row in as_tuples:
            self.assertIn(row, possible, "a row that is not allowed")
        for i, j in itertools.combinations(range(len(factors)), 2):
            needed = {(row[i], row[j]) for row in possible}
            covered = {(row[i], row[j]) for row in as_tuples}
            self.assertEqual(needed - covered, set(), f"pairs of factors {i}, {j} missed")
        for i in range(len(factors)):
            self.assertEqual({row[i] for row in possible} - {row[i] for row in as_tuples},
                             set())
        return as_tuples

    def test_random_factor_sets_are_covered_pairwise(self):
        generator = random.Random(7)
        for _ in range(40):
            choices = {f"o{k}": tuple(range(generator.randint(1, 3)))
                       for k in range(generator.randint(0, 5))}
            layouts = [f"tp={t},sp={s}" for t, s in
                       itertools.islice(itertools.product((2, 4), (0, 1)),
                                        generator.randint(1, 4))]
            self.assert_pairwise(recipe_with(**choices), layouts)

    def test_pairwise_is_smaller_than_the_product(self):
        rows = self.assert_pairwise(recipe_with(**{f"o{k}": (0, 1) for k in range(6)}),
                                    ["tp=2,sp=0", "tp=2,sp=1"])
        self.assertLess(len(rows), 12)  # the product has 128

    def test_a_recipe_without_options_gets_every_layout(self):
        rows = self.assert_pairwise(recipe_with(), ["tp=2,sp=0", "tp=4,sp=1"])
        self.assertEqual(rows, [("tp=2,sp=0",), ("tp=4,sp=1",)])

    def test_rows_not_allowed_are_left_out_and_their_pairs_not_required(self):
        def allowed(layout, values):
            return values["scatter"] == 0 or not layout.sp
        rows = self.assert_pairwise(recipe_with(scatter=(0, 1), bias=(1, 0)),
                                    ["tp=2,sp=0", "tp=2,sp=1"], allowed)
        self.assertNotIn(("tp=2,sp=1", 1, 1), rows)
        self.assertNotIn(("tp=2,sp=1", 1, 0), rows)

    def test_a_row_names_only_the_options_off_their_default(self):
        recipe = recipe_with(bias=(1, 0), kind=("a", "b"))
        texts = [text for _, text in recipes.covering(recipe, ["tp=2,sp=0"])]
        self.assertEqual(texts[0], "tp=2,sp=0")
        self.assertIn("tp=2,sp=0,bias=0,kind=b", texts)


class Options(unittest.TestCase):
    def run_asked(self, recipe, text):
        os.environ["SHARDPROOF_PARALLEL"] = text
        try:
            return recipe()
        finally:
            del os.environ["SHARDPROOF_PARALLEL"]

    def test_asked_values_reach_the_recipe_and_defaults_fill_the_rest(self):
        recipe = recipe_with(bias=(1, 0), kind=("a", "b"))
        self.assertEqual(self.run_asked(recipe, "tp=2,sp=0,kind=b"), {"bias": 1, "kind": "b"})

    def test_unknown_option_and_value_are_refused(self):
        recipe = recipe_with(bias=(1, 0))
        with self.assertRaisesRegex(recipes.RecipeError, "has no option 'gated'"):
            self.run_asked(recipe, "tp=2,gated=1")
        with self.assertRaisesRegex(recipes.RecipeError, "option bias takes 1, 0, not 2"):
            self.run_asked(recipe, "tp=2,bias=2")

    def test_a_variant_fixes_its_option(self):
        recipe = recipe_with(bias=(1, 0), kind=("a", "b"))
        fixed = recipes.variant(recipe, kind="b")
        self.assertEqual(self.run_asked(fixed, "tp=2"), {"bias": 1, "kind": "b"})
        with self.assertRaisesRegex(recipes.RecipeError, "fixes kind=b"):
            self.run_asked(fixed, "tp=2,kind=a")
        with self.assertRaisesRegex(recipes.RecipeError, "has no option"):
            recipes.variant(recipe, gated=1)

    def test_bad_option_text_is_refused(self):
        for text in ("tp=x", "bias=", "bias=a-b", "1x=2"):
            with self.assertRaises(recipes.RecipeError, msg=text):
                recipes.parse(text)


if __name__ == "__main__":
    unittest.main()
