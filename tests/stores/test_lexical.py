"""The lexical channel: tokenization (English, Chinese) and the FTS5-backed BM25 index."""

from __future__ import annotations

import sqlite3

import pytest

from engram.stores.lexical.index import INDEX_FILE, LexicalDocument, LexicalIndex, Tokenizer

# A small Chinese sanity set: personal memories and how a user would ask about them.
ZH_MEMORIES = {
    "m1": "用户喜欢用深色主题写代码，VS Code 里一直开着 One Dark Pro",
    "m2": "用户的女儿今年九月上小学一年级",
    "m3": "用户在杭州的一家电商公司做后端开发，主要写 Go 和 Python",
    "m4": "用户对花生过敏，点外卖时要避开含花生的菜",
    "m5": "上次部署时忘了跑数据库迁移，导致线上服务报错，以后发布前必须先执行 migrate",
    "m6": "用户计划明年春天去日本京都看樱花",
    "m7": "用户每天早上六点半起床跑步，周末会去西湖边骑自行车",
    "m8": "项目 engram 使用 Chroma 作为向量数据库，嵌入模型是 all-MiniLM-L6-v2",
    "m9": "用户不喜欢开会太多，更喜欢用文字异步沟通",
    "m10": "用户的猫叫年糕，是一只三岁的橘猫",
    "m11": "用户正在学习日语，目标是通过 N2 考试",
    "m12": "用户习惯用 Vim 快捷键，编辑器里都装了 Vim 插件",
    "m13": "用户的生日是十一月三号",
    "m14": "用户在准备把单体服务拆分成微服务，先拆订单模块",
    "m15": "用户喝咖啡只喝美式，不加糖不加奶",
    "m16": "测试环境的 Redis 内存不够，上周因为缓存淘汰导致接口变慢",
    "m17": "用户的老家在四川成都，过年会回家",
    "m18": "用户最近在读《三体》，很喜欢刘慈欣的小说",
    "m19": "用户在考虑买一辆电动车，预算二十万左右",
    "m20": "用户更倾向于使用 PostgreSQL 而不是 MySQL",
}
ZH_QUERIES = [
    ("我用什么编辑器主题？", "m1"),
    ("女儿什么时候上学", "m2"),
    ("用户在哪个城市工作，用什么语言开发", "m3"),
    ("有什么食物过敏吗", "m4"),
    ("发布之前要注意什么？数据库迁移", "m5"),
    ("去日本旅行的计划", "m6"),
    ("用户平时怎么锻炼身体，跑步吗", "m7"),
    ("engram 用的是什么向量库", "m8"),
    ("沟通方式偏好：开会还是文字", "m9"),
    ("我的猫叫什么名字", "m10"),
    ("日语考试目标", "m11"),
    ("快捷键习惯", "m12"),
    ("生日是哪天", "m13"),
    ("微服务拆分从哪个模块开始", "m14"),
    ("喜欢喝什么咖啡", "m15"),
    ("Redis 缓存出过什么问题", "m16"),
    ("老家在哪里", "m17"),
    ("最近在看什么书", "m18"),
    ("买车预算", "m19"),
]


@pytest.fixture
def index():
    with LexicalIndex() as idx:
        yield idx


def ids(results: list[tuple[str, float]]) -> list[str]:
    return [doc_id for doc_id, _ in results]


# -- tokenizer ------------------------------------------------------------------------------------


def test_english_is_stemmed_and_stopwords_dropped():
    assert Tokenizer()("What did Melanie paint? She painted sunsets, paintings!") == [
        "melani",
        "paint",
        "paint",
        "sunset",
        "paint",
    ]


def test_single_letters_dropped_but_digits_kept():
    assert Tokenizer()("a b 3 x 42 K8s") == ["3", "42", "k8s"]


def test_chinese_becomes_overlapping_bigrams_and_a_lone_character_stays():
    assert Tokenizer()("数据库迁移") == ["数据", "据库", "库迁", "迁移"]
    assert Tokenizer()("猫") == ["猫"]


def test_mixed_chinese_and_english_split_at_the_script_boundary():
    assert Tokenizer()("我用Python写后端") == ["我用", "python", "写后", "后端"]


def test_fullwidth_and_case_are_normalised():
    assert Tokenizer()("ＰＹＴＨＯＮ Running") == Tokenizer()("python running") == ["python", "run"]


def test_tokenizer_options_change_output_and_signature():
    plain = Tokenizer(stopwords=(), language=None)
    assert plain("the painted") == ["the", "painted"]
    assert plain.signature != Tokenizer().signature


# -- index ----------------------------------------------------------------------------------------


def test_search_ranks_by_bm25_and_matches_stems(index):
    index.upsert(
        "u",
        [
            LexicalDocument("m1", "Melanie painted a lake sunrise last year"),
            LexicalDocument("m2", "Melanie took the kids camping"),
            LexicalDocument("m3", "Caroline is researching adoption agencies"),
            LexicalDocument("m4", "Caroline went to an LGBTQ support group"),
        ],
    )
    results = index.search("u", "What paintings has Melanie made?")
    assert ids(results) == ["m1", "m2"]
    assert results[0][1] > results[1][1] > 0


def test_query_without_terms_and_unknown_scope_return_nothing(index):
    index.upsert("u", [LexicalDocument("m1", "dark mode everywhere")])
    assert index.search("u", "what is it?") == []
    assert index.search("nobody", "dark mode") == []


def test_query_syntax_characters_are_plain_text(index):
    index.upsert("u", [LexicalDocument("m1", 'He said "NEAR" AND OR NOT (x*) -y ^z')])
    for query in ['"', "NEAR(", "AND OR NOT", "x* -y ^z", "col:val", "'; DROP TABLE docs; --"]:
        index.search("u", query)  # must not raise an FTS5 syntax error
    assert ids(index.search("u", 'near "and"')) == ["m1"]


def test_upsert_replaces_a_document_with_the_same_id(index):
    index.upsert("u", [LexicalDocument("m1", "prefers Vue for frontends")])
    index.upsert("u", [LexicalDocument("m1", "prefers React for frontends")])
    assert index.search("u", "Vue") == []
    assert ids(index.search("u", "React")) == ["m1"]
    assert index.count("u") == 1


def test_batches_larger_than_one_id_lookup_replace_and_delete_every_document(index):
    count = 1_234  # more ids than one `IN (...)` lookup takes
    index.upsert("u", [LexicalDocument(f"m{i}", f"draft number {i}") for i in range(count)])
    index.upsert("u", [LexicalDocument(f"m{i}", f"final number {i}") for i in range(count)])
    assert index.count("u") == count
    assert index.search("u", "draft") == []
    assert len(index.search("u", "final", limit=2 * count)) == count
    index.delete("u", [f"m{i}" for i in range(1, count)])
    assert ids(index.search("u", "final")) == ["m0"]


def test_last_duplicate_in_one_batch_wins(index):
    index.upsert("u", [LexicalDocument("m1", "first draft"), LexicalDocument("m1", "final text")])
    assert index.search("u", "draft") == []
    assert index.digests("u") == {"m1": LexicalDocument("m1", "final text").digest}


def test_delete_removes_and_ignores_unknown_ids(index):
    index.upsert("u", [LexicalDocument("m1", "tea"), LexicalDocument("m2", "green tea")])
    index.delete("u", ["m1", "never-existed"])
    index.delete("other-scope", ["m2"])
    assert ids(index.search("u", "tea")) == ["m2"]


def test_scopes_are_isolated_and_drop_scope_removes_everything_of_one(index):
    index.upsert("memories/alice", [LexicalDocument("m1", "Alice likes jazz")])
    index.upsert(
        "memories/bob", [LexicalDocument("m1", "Bob likes jazz"), LexicalDocument("b2", "jazz")]
    )
    assert ids(index.search("memories/alice", "jazz")) == ["m1"]
    assert sorted(ids(index.search("memories/bob", "jazz"))) == ["b2", "m1"]
    index.drop_scope("memories/alice")
    assert index.scopes() == ["memories/bob"]
    assert index.search("memories/alice", "jazz") == []
    assert index.count("memories/alice") == 0
    assert index.count("memories/bob") == 2


@pytest.mark.parametrize("weight", [0.5, 1.0])
def test_context_terms_count_context_weight_times_the_documents_own(weight):
    with LexicalIndex(context_weight=weight) as index:
        index.upsert(
            "u",
            [
                LexicalDocument("own", "married lake", context="blue sky"),
                LexicalDocument("context", "blue sky", context="married lake"),
                LexicalDocument("other", "garden water", context="green plants"),
            ],
        )
        scores = dict(index.search("u", "married"))
    assert set(scores) == {"own", "context"}  # found through its context too
    if weight == 1.0:
        assert scores["own"] == pytest.approx(scores["context"])
    else:
        assert scores["own"] > scores["context"] * 1.2


def test_failed_upsert_changes_nothing(index):
    index.upsert("u", [LexicalDocument("m1", "kept")])
    unbindable = LexicalDocument(object(), "never stored")  # type: ignore[arg-type]
    with pytest.raises(sqlite3.Error):
        index.upsert("u", [LexicalDocument("m2", "new text"), unbindable])
    assert index.digests("u") == {"m1": LexicalDocument("m1", "kept").digest}
    assert index.search("u", "new text") == []


def test_index_persists_in_its_folder(tmp_path):
    with LexicalIndex(tmp_path) as index:
        index.upsert("u", [LexicalDocument("m1", "Alice's cat is called Mochi", context="pets")])
    assert (tmp_path / INDEX_FILE).is_file()
    with LexicalIndex(tmp_path) as index:
        assert ids(index.search("u", "mochi")) == ["m1"]
        assert index.digests("u") == {
            "m1": LexicalDocument("m1", "Alice's cat is called Mochi", "pets").digest
        }


def test_a_new_tokenizer_retokenizes_the_stored_documents(tmp_path):
    with LexicalIndex(tmp_path, tokenizer=Tokenizer(language=None)) as index:
        index.upsert("u", [LexicalDocument("m1", "she painted the fence")])
        assert index.search("u", "painting") == []
    with LexicalIndex(tmp_path) as index:
        assert ids(index.search("u", "painting")) == ["m1"]


def test_digest_depends_on_text_and_context():
    base = LexicalDocument("m1", "text", "context")
    assert base.digest == LexicalDocument("other-id", "text", "context").digest
    assert base.digest != LexicalDocument("m1", "text", "").digest
    assert base.digest != LexicalDocument("m1", "text!", "context").digest


def test_invalid_arguments_say_what_is_wrong(index):
    with pytest.raises(ValueError, match="limit"):
        index.search("u", "x", limit=0)
    with pytest.raises(ValueError, match="context_weight"):
        LexicalIndex(context_weight=2.0)


def test_chinese_sanity_set_finds_each_memory_in_the_top_3(index):
    index.upsert("zh", [LexicalDocument(k, v) for k, v in ZH_MEMORIES.items()])
    misses = [
        (query, ids(index.search("zh", query))[:3])
        for query, expected in ZH_QUERIES
        if expected not in ids(index.search("zh", query))[:3]
    ]
    assert misses == []
