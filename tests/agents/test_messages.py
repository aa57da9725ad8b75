"""TeamMessage: the one message type, from the member that speaks to the overlay and log."""

import dataclasses
import re

import pytest

from orgteams.agents.messages import EVERYONE, TeamMessage, render
from orgteams.envs.render.overlay import Overlay


def test_message_is_frozen_and_normalizes_receivers():
    m = TeamMessage("agent_0", ["agent_1", "agent_2"], "hi", round=3, stage=1)
    assert m.receivers == ("agent_1", "agent_2")
    assert m.receivers_json() == ["agent_1", "agent_2"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.text = "changed"  # type: ignore[misc]
    assert TeamMessage("agent_0", EVERYONE, "hi").receivers_json() == "everyone"


def test_audience_is_delivered_else_named_else_everyone():
    named = TeamMessage("agent_0", ("agent_1", "agent_3"), "hi")
    assert named.audience == ("agent_1", "agent_3")
    routed = dataclasses.replace(named, delivered=("agent_1",))
    assert routed.audience == ("agent_1",) and routed.receivers == ("agent_1", "agent_3")
    assert TeamMessage("agent_0", EVERYONE, "hi").audience == ()
    assert TeamMessage("agent_0", EVERYONE, "hi").addressed_to("agent_7")
    assert not named.addressed_to("agent_2")


def test_silent_turn_and_bad_input():
    assert TeamMessage("agent_0", (), abstained=True).silent
    with pytest.raises(ValueError, match=re.escape(
            "receivers must be a tuple of agent names or 'everyone', got 'all'")):
        TeamMessage("agent_0", "all", "hi")
    with pytest.raises(ValueError, match=re.escape(
            "message kind 'note' must be one of claim, release, found, assign, done, status, "
            "correct, text")):
        TeamMessage("agent_0", EVERYONE, "hi", "note")


def test_overlay_draws_the_same_message_object():
    overlay = Overlay()
    m = TeamMessage("agent_1", EVERYONE, "on my way", round=2, delivered=("agent_0",))
    overlay.say(m)
    assert overlay.latest["agent_1"] is m and list(overlay.log) == [m]


def test_status_and_correct_render_as_short_sentences():
    status = TeamMessage.structured("agent_1", "everyone", "status",
                                    {"doing": "grab:cupcake_2", "holding": ("apple_1",)})
    assert status.text == "doing grab cupcake_2, holding apple_1"
    correct = TeamMessage.structured("agent_1", ("agent_0",), "correct",
                                     {"agent": "agent_1", "action": "explore:kitchen",
                                      "reason": "explored already"})
    assert correct.text == "correct agent_1: explore kitchen (explored already)"


def test_said_id_is_one_object_for_equal_things_said_while_any_is_kept():
    import gc

    M = TeamMessage  # noqa: N806 - short

    a = M.structured("agent_1", "everyone", "status", {"doing": "wait", "holding": ()})
    again = M("agent_1", ("agent_2",), "other text", "status", round=4,
              content={"holding": (), "doing": "wait"})  # other receivers, round, order
    other = M.structured("agent_1", "everyone", "status", {"doing": "wait", "holding": ("x",)})
    assert a.said_id is again.said_id and a.said_id is not other.said_id
    heard = {a.said_id}  # a reader's memory keeps it: a repeat made later is found
    del a, again
    gc.collect()
    later = M.structured("agent_1", "everyone", "status", {"doing": "wait", "holding": ()})
    assert later.said_id in heard and other.said_id not in heard
    # kept by nothing any more: its entry goes with it (the table does not grow with
    # everything ever said), and an equal value said again gets a new object
    from orgteams.agents import messages

    key = later.said
    del heard, later
    gc.collect()
    assert key not in messages._SAID_IDS
    again = M.structured("agent_1", "everyone", "status", {"doing": "wait", "holding": ()})
    assert again.said_id.key == key and key in messages._SAID_IDS
    # content that cannot be hashed: said itself (a reader's set refuses it, as before)
    odd = M("agent_1", EVERYONE, "x", "found", content={"object": ["a", "list"]})
    assert odd.said_id == odd.said


def test_speaks_for_and_doing_read_what_planners_take_from_a_message():
    claim = TeamMessage.structured("agent_0", ("agent_1",), "claim",
                                   {"object": "cupcake_2", "tick": 3, "for": "agent_4"})
    relay = TeamMessage.structured("agent_0", ("agent_1",), "found",
                                   {"object": "apple_1", "location": "fridge", "by": "agent_5"})
    own = TeamMessage.structured("agent_0", EVERYONE, "claim", {"room": "kitchen"})
    assert (claim.speaks_for, relay.speaks_for, own.speaks_for) == (
        "agent_4", "agent_5", "agent_0")
    status = TeamMessage.structured("agent_2", EVERYONE, "status",
                                    {"doing": "grab:cupcake_2", "holding": ()})
    idle = TeamMessage.structured("agent_2", EVERYONE, "status", {"doing": "wait"})
    assert (status.doing, idle.doing, own.doing) == (
        ("grab", "cupcake_2"), ("wait", ""), ("", ""))
    # a copy with other content reads its own content, not the original's cached reading
    assert dataclasses.replace(status, content={"doing": "explore:kitchen"}).doing == (
        "explore", "kitchen")
    # what a planner records of a status and a claim, read once for all its readers
    assert (status.grabs, idle.grabs, own.grabs) == ("cupcake_2", None, None)
    assert claim.claimed == (False, "cupcake_2", ("agent_4", 3))
    assert own.claimed == (True, "agent_0", "kitchen")
    untimed = TeamMessage.structured("agent_3", EVERYONE, "claim", {"object": "cup_1"})
    assert untimed.claimed == (False, "cup_1", ("agent_3", 0))
    assert TeamMessage.structured("agent_3", EVERYONE, "claim", {}).claimed is None
    bad = TeamMessage.structured("agent_3", EVERYONE, "claim", {"object": "x", "tick": "soon"})
    with pytest.raises(ValueError, match="invalid literal for int"):
        bad.claimed  # noqa: B018 (a malformed tick stays an error, as int() says it)


def test_noted_reads_where_a_report_says_an_object_is_as_planners_noted_it():
    """``noted``: what a planner notes in its memory of a message it heard, as it read
    each message's content at its next turn."""
    def plain(m):
        c = m.content
        try:
            if m.kind == "found" or (m.kind == "assign" and "location" in c):
                obj = c["object"] if m.kind == "found" else c["action"].partition(":")[2]
                return obj, c["location"], c.get("tick")
            if m.kind == "done" and "object" in c:
                return c["object"], c["location"], c.get("tick")
        except KeyError:
            pass
        return None

    contents = [{"object": "apple_1", "location": "fridge", "tick": 4},
                {"object": "apple_1", "location": "fridge"}, {"object": "apple_1"},
                {"room": "kitchen"}, {"agent": "agent_1", "action": "grab:cup_2"},
                {"agent": "agent_1", "action": "grab:cup_2", "location": "table_1"},
                {"agent": "agent_1", "action": "explore:hall", "location": "x", "tick": 2},
                {"location": "fridge"}, {}]
    for kind in ("found", "done", "assign", "claim", "status", "release"):
        for c in contents:
            m = TeamMessage("agent_0", EVERYONE, "said", kind, content=c)
            assert m.noted == plain(m), (kind, c)
            assert m.noted is m.noted  # made once, shared by its readers
    assert TeamMessage.structured("agent_0", EVERYONE, "found", contents[0]).noted == (
        "apple_1", "fridge", 4)


def _plain_unseen(messages, seen, skip, structured):
    """The reader's filter message by message, as planners did it before broadcasts."""
    out = []
    for m in messages:
        if m.kind in skip or (structured and not m.content):
            continue
        if m.said_id not in seen:
            seen.add(m.said_id)
            out.append(m)
    return out


def _said_by(m):
    return m.sender, m.kind


def _random_message(rng, senders, unhashable=0.0):
    kind = rng.choice(["claim", "release", "status", "found", "text", "action", "done"])
    n = rng.randrange(10_000)
    content = rng.choice([{}, {"object": f"cup_{n}"}, {"doing": f"grab:cup_{n}", "holding": ()},
                          {"object": f"cup_{n}", "tick": rng.randrange(2)}])
    if rng.random() < unhashable:
        content = {"holding": [f"cup_{rng.randrange(2)}"]}  # cannot be hashed
    return TeamMessage(rng.choice(senders), rng.choice([EVERYONE, ("r1",)]), "said", kind,
                       round=rng.randrange(3), content=content)


@pytest.mark.parametrize("seed", range(60))
def test_unseen_reads_a_broadcast_cut_as_the_plain_loop_does(seed, monkeypatch):
    """A reader's cut of a broadcast gives what the message-by-message filter gives
    (same messages, same objects, same order, same said_ids marked seen, the same
    error for content that cannot be hashed), whatever it heard before: with repeats
    within a broadcast and across broadcasts (rounds), skipped kinds, broadcasts
    growing between cuts, readers cutting older broadcasts or others' cuts, and said_ids
    removed from what a reader heard. Its messages of a kind (and values derived from
    them) are those of the plain list."""
    import random

    from orgteams.agents import messages
    from orgteams.agents.messages import Broadcast, Heard, Seen, of_kind, unseen

    if seed % 2:
        # every cut asks which keys an earlier cut covered (a 256-agent team's cuts have
        # hundreds of keys; these few would all be looked up at once)
        monkeypatch.setattr(messages, "_FEW", 0)
    rng = random.Random(seed)
    senders = [f"a{i}" for i in range(rng.randrange(2, 7))]
    # a third of the broadcasts say something twice or cannot hash a content: read
    # message by message; the others are read from their keys
    repeats, unhashable = (0.3, 0.03) if seed % 3 == 0 else (0.0, 0.0)
    pool = [_random_message(rng, senders, unhashable) for _ in range(30)]
    readers = {s: (Seen(), set()) for s in senders + ["r1"]}
    broadcasts = []
    exact = 0
    for _ in range(8):  # rounds
        broadcasts.append(Broadcast())
        last = [] if rng.random() < 0.3 else list(broadcasts[-2] if len(broadcasts) > 1 else [])
        for _ in range(3):
            for _ in range(rng.randrange(0, 10)):
                said = rng.choice(pool) if rng.random() < repeats else (
                    rng.choice(last) if last and rng.random() < 0.6  # said again: a repeat
                    else _random_message(rng, senders, unhashable))
                broadcasts[-1].append(said)
            for reader, (seen, mine) in readers.items():
                # heard before: elsewhere, or some of the broadcasts; or forgotten
                for m in rng.sample(pool + broadcasts[-1], rng.randrange(0, 4)):
                    try:
                        seen.add(m.said_id)
                        mine.add(m.said_id)
                    except TypeError:
                        pass
                if mine and rng.random() < 0.05:
                    gone = rng.choice(sorted(mine, key=id))
                    seen.discard(gone)
                    mine.discard(gone)
                broadcast = rng.choice(broadcasts) if rng.random() < 0.2 else broadcasts[-1]
                start = rng.randrange(0, len(broadcast) + 1) if rng.random() < 0.4 else 0
                stop = rng.randrange(start, len(broadcast) + 1) if rng.random() < 0.4 \
                    else len(broadcast)
                without = reader if rng.random() < 0.9 else rng.choice([None, *senders])
                places = [i for i, m in enumerate(broadcast) if m.sender == without]
                cut = Heard.cut(broadcast, start, stop, without, places)
                plain = [m for m in broadcast[start:stop] if m.sender != without]
                assert list(cut) == plain
                kind = rng.choice(["claim", "status", "action"])  # read from its index
                assert [id(m) for m in of_kind(cut, kind)] == \
                    [id(m) for m in plain if m.kind == kind]
                assert of_kind(cut, kind, _said_by) == [_said_by(m) for m in plain
                                                        if m.kind == kind]
                skip = rng.choice([(), ("claim", "release"), frozenset(("text", "action"))])
                structured = rng.random() < 0.5
                try:
                    expected = _plain_unseen(plain, mine, skip, structured)
                except TypeError:
                    with pytest.raises(TypeError, match="unhashable type"):
                        unseen(cut, seen, skip, structured)
                    assert seen == mine
                    continue
                got = unseen(cut, seen, skip, structured)
                exact += broadcast.keys_for(frozenset(skip), structured).exact
                assert [id(m) for m in got] == [id(m) for m in expected]
                assert seen == mine
    assert exact or seed % 3 == 0  # the keys were read, not only the messages


def test_a_changed_cut_is_read_as_a_plain_list_and_a_broadcast_only_grows():
    from orgteams.agents.messages import Broadcast, Heard, unseen

    a = TeamMessage("a1", EVERYONE, "x", "status", content={"doing": "wait"})
    b = TeamMessage("a2", EVERYONE, "y", "status", content={"doing": "wait"})
    cut = Heard.cut(Broadcast([a, b]), 0, 2)
    cut.pop()  # no longer what the broadcast holds there
    assert cut.source is None and unseen(cut, set()) == [a]
    with pytest.raises(TypeError, match=re.escape(
            "a Broadcast is only appended to: its readers' cuts index into it")):
        Broadcast([a])[0] = b


def test_readers_left_with_the_same_messages_are_handed_one_list_none_may_change():
    from orgteams.agents.messages import Broadcast, Handed, Heard, Seen, unseen

    said = [TeamMessage.structured(f"a{i}", EVERYONE, "status", {"doing": f"grab:cup_{i}"})
            for i in range(3)]
    broadcast = Broadcast(said)
    first, second, speaker = Seen(), Seen(), Seen()
    got = [unseen(Heard.cut(broadcast, 0, 3, reader), seen)
           for reader, seen in (("r1", first), ("r2", second))]
    assert got[0] is got[1] and type(got[0]) is Handed and got[0] == said
    mine = unseen(Heard.cut(broadcast, 0, 3, "a1", [1]), speaker)  # its own left out
    assert mine == [said[0], said[2]] and mine is not got[0]
    assert (mine.whole, mine.without, got[0].whole) == (got[0], "a1", None)
    with pytest.raises(TypeError, match="shared by its readers"):
        got[0] += said


def test_stamped_and_silent_equal_the_constructor_on_random_messages():
    """The round loop's stamped copies and silent turns (made without the frozen
    dataclass's field-by-field init) are the messages the constructor makes: equal,
    same hash, same fields in the same order, said_id computed afresh for the new
    sender; a subclass is refused rather than losing its fields."""
    import dataclasses
    import random

    rng = random.Random(7)
    kinds = ["claim", "release", "found", "status", "text", "assign", "done"]
    for _ in range(300):
        kind = rng.choice(kinds)
        receivers = EVERYONE if rng.random() < 0.5 else tuple(
            f"agent_{i}" for i in rng.sample(range(9), rng.randint(0, 3)))
        content = {} if kind == "text" else {"object": f"apple_{rng.randint(0, 3)}"}
        m = TeamMessage(f"agent_{rng.randint(0, 8)}", receivers, f"t{rng.random()}", kind,
                        content=content)
        _ = m.said_id  # a kept value of the original must not leak into the copy
        sender, rnd, stage = f"agent_{rng.randint(0, 8)}", rng.randint(0, 50), rng.randint(0, 9)
        delivered = tuple(f"agent_{i}" for i in range(rng.randint(0, 4)))
        role, abstained = rng.choice([None, "scout"]), rng.random() < 0.3
        want = TeamMessage(sender, m.receivers, m.text, m.kind, rnd, stage, m.content,
                           delivered, role, abstained)
        got = m.stamped(sender, rnd, stage, delivered, role, abstained)
        assert got == want and hash(got) == hash(want)
        assert list(vars(got).items()) == list(vars(want).items())
        assert got.said == want.said and got.said_id is want.said_id
        silent = TeamMessage.silent_turn(sender, rnd, stage, role, abstained)
        plain = TeamMessage(sender, (), round=rnd, stage=stage, role=role, abstained=abstained)
        assert silent == plain and list(vars(silent).items()) == list(vars(plain).items())
        assert silent.content is not TeamMessage.silent_turn(sender, rnd, stage, role,
                                                        abstained).content
        with pytest.raises(dataclasses.FrozenInstanceError):
            got.round = 1

    @dataclasses.dataclass(frozen=True)
    class Tagged(TeamMessage):
        tag: str = "x"

    with pytest.raises(TypeError, match=r"^stamped\(\) copies a TeamMessage, not a Tagged$"):
        Tagged("agent_0", EVERYONE, "hi").stamped("agent_1", 0, 0, (), None, False)


def test_structured_equals_the_constructor_and_refuses_as_it_does():
    """A structured message (made unchecked once its kind and receivers are checked) is
    the one the constructor makes of its rendering: equal, same hash, same fields in
    the same order, receivers of any sequence made a tuple, its content a copy; bad
    kinds and receivers are refused with the constructor's messages; a subclass gets
    its own class."""
    import random

    rng = random.Random(11)
    contents = {"claim": [{"object": "cup_1", "tick": 3}, {"room": "hall"}],
                "found": [{"object": "apple_1", "location": "fridge"}],
                "status": [{"doing": "grab:cup_2", "holding": ("x",)}, {"doing": "wait"}],
                "done": [{"object": "cup_1", "target": "table"}], "release": [{"room": "den"}]}
    for _ in range(200):
        kind = rng.choice(sorted(contents))
        content = dict(rng.choice(contents[kind]))
        receivers = rng.choice([EVERYONE, ("agent_1",), ["agent_2", "agent_3"], ()])
        got = TeamMessage.structured("agent_0", receivers, kind, content)
        want = TeamMessage("agent_0", receivers, render(kind, content), kind,
                           content=dict(content))
        assert got == want and hash(got) == hash(want)
        assert list(vars(got).items()) == list(vars(want).items())
        assert type(got.receivers) is type(want.receivers)
        assert got.content == content and got.content is not content
        with pytest.raises(dataclasses.FrozenInstanceError):
            got.text = "x"
    with pytest.raises(ValueError, match=r"^message kind 'shout' must be one of claim, "):
        TeamMessage.structured("agent_0", EVERYONE, "shout", {})
    with pytest.raises(ValueError, match=r"^receivers must be a tuple of agent names or "
                                         r"'everyone', got 'all'$"):
        TeamMessage.structured("agent_0", "all", "claim", {"room": "hall"})

    @dataclasses.dataclass(frozen=True)
    class Tagged(TeamMessage):
        tag: str = "x"

    tagged = Tagged.structured("agent_0", EVERYONE, "claim", {"room": "hall"})
    assert type(tagged) is Tagged and tagged.tag == "x" and tagged.text == "claim explore hall"
