#!/usr/bin/env python3
"""make_corpus.py - writes models/data/corpus.txt, the built-in training text
of the tiny model.

The corpus is generated, not copied: short stories composed from a small
English grammar and word lists written for this project, so it is free of
any third-party copyright (public domain, like this script). The text is
regular enough that a tiny byte-level GPT learns its spelling and phrasing
within a few dozen steps, and varied enough not to be memorised at once.

Deterministic: the same script always writes the same bytes.
    python3 models/data/make_corpus.py [output] [kilobytes]
"""
import random
import sys

SEED = 20240520
TARGET_KB = 300

NAMES = ["Anna", "Ben", "Clara", "David", "Ella", "Frank", "Grace", "Henry",
         "Iris", "Jack", "Kate", "Leo", "Mary", "Nora", "Oscar", "Paul",
         "Rose", "Sam", "Tom", "Vera"]
ROLES = ["the baker", "the farmer", "the old captain", "the young doctor",
         "the teacher", "the miller", "the fisherman", "the gardener",
         "the painter", "the smith", "the shepherd", "the weaver"]
ANIMALS = ["dog", "cat", "horse", "fox", "goose", "owl", "sheep", "crow",
           "rabbit", "mule"]
PLACES = ["the village", "the market", "the river", "the forest", "the hill",
          "the harbour", "the mill", "the church", "the bridge", "the farm",
          "the garden", "the road to town", "the old house", "the meadow"]
THINGS = ["a basket of apples", "a loaf of bread", "an old map", "a lantern",
          "a letter", "a small wooden box", "a bag of flour", "a silver key",
          "a red coat", "a jar of honey", "a bundle of wood", "a new rope",
          "a book of songs", "a pair of boots", "a little bell"]
ADJS = ["quiet", "cold", "bright", "dark", "warm", "long", "strange", "busy",
        "grey", "calm", "windy", "golden", "wet", "still"]
TIMES = ["In the morning", "At noon", "In the evening", "Late at night",
         "Before dawn", "On Sunday", "The next day", "After the rain",
         "That winter", "One summer day", "Early in spring", "At last"]
WEATHER = ["the sun was shining", "it began to rain", "a cold wind blew",
           "snow lay on the fields", "the sky was clear", "fog rolled in",
           "the air smelled of smoke", "the stars came out"]
MOVES = ["walked to", "ran to", "rode to", "went down to", "came back from",
         "hurried to", "wandered through", "climbed up to", "looked across"]
ACTS = ["found", "lost", "carried", "sold", "bought", "mended", "hid",
        "opened", "gave away", "painted", "cleaned", "wrapped"]
FEELS = ["happy", "tired", "worried", "glad", "surprised", "afraid",
         "hungry", "proud", "sleepy", "curious"]
SAYS = ["said", "asked", "whispered", "called", "answered", "laughed"]
LINES = ["Where are you going?", "It is late, we should go home.",
         "Look at the sky!", "Have you seen my {thing}?",
         "The {animal} is in {place}.", "I will meet you at {place}.",
         "Thank you, that is very kind.", "Who left {thing} here?",
         "We need more wood for the fire.", "Do not be afraid.",
         "The market opens at noon.", "Let us wait until the rain stops."]
ENDINGS = ["and that was the end of the day.",
           "and everyone went home to sleep.",
           "and the village was quiet again.",
           "and nobody spoke of it again.",
           "and they laughed about it for years."]


class Story:
    """One short story: a cast, a place and a thing, kept for coherence."""

    def __init__(self, rng):
        self.rng = rng
        self.a, self.b = rng.sample(NAMES, 2)
        self.role = rng.choice(ROLES)
        self.animal = rng.choice(ANIMALS)
        self.place = rng.choice(PLACES)
        self.thing = rng.choice(THINGS)

    def pick(self, xs):
        return self.rng.choice(xs)

    def who(self):
        return self.pick([self.a, self.b, self.a, self.role.capitalize()])

    def fill(self, s):
        return s.format(thing=self.thing.split(" ", 1)[1], animal=self.animal,
                        place=self.pick(PLACES))

    def sentence(self):
        r = self.rng.randrange(8)
        if r == 0:
            return f"{self.pick(TIMES)}, {self.pick(WEATHER)}."
        if r == 1:
            return f"{self.who()} {self.pick(MOVES)} {self.pick(PLACES)}."
        if r == 2:
            return (f"{self.who()} {self.pick(ACTS)} {self.thing} near "
                    f"{self.place}.")
        if r == 3:
            line = self.fill(self.pick(LINES))
            if line.endswith("."):  # "..., " said X.
                line = line[:-1] + ","
            return f'"{line}" {self.pick(SAYS)} {self.who()}.'
        if r == 4:
            return (f"{self.who()} was {self.pick(FEELS)}, because the "
                    f"{self.animal} had run away.")
        if r == 5:
            return (f"The {self.pick(ADJS)} road led past {self.place}, and "
                    f"the {self.animal} followed {self.pick([self.a, self.b])}.")
        if r == 6:
            return (f"{self.a} and {self.b} sat by the fire, and "
                    f"{self.role} told them about {self.pick(PLACES)}.")
        return (f"When {self.pick(WEATHER)}, {self.who()} "
                f"{self.pick(MOVES)} {self.pick(PLACES)} "
                f"{self.pick(ENDINGS)}")

    def text(self):
        opening = (f"{self.pick(TIMES)}, {self.a} lived near {self.place} "
                   f"with a {self.pick(ADJS)} {self.animal}.")
        paras = []
        for p in range(self.rng.randint(2, 4)):
            n = self.rng.randint(3, 6)
            body = [self.sentence() for _ in range(n)]
            if p == 0:
                body.insert(0, opening)
            paras.append(" ".join(body))
        return "\n\n".join(paras)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "models/data/corpus.txt"
    kb = int(sys.argv[2]) if len(sys.argv) > 2 else TARGET_KB
    rng = random.Random(SEED)
    parts = ["# zb tiny corpus: generated by models/data/make_corpus.py from "
             "a small grammar (public domain).\n\n"]
    size = len(parts[0])
    n = 0
    while size < kb * 1024:
        n += 1
        story = f"Story {n}.\n\n{Story(rng).text()}\n\n"
        parts.append(story)
        size += len(story)
    with open(out, "w", encoding="ascii", newline="\n") as f:
        f.write("".join(parts))


if __name__ == "__main__":
    main()
