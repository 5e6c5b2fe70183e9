"""Secret redaction: what is redacted (formats, labelled values, card data) and what is left alone."""

from __future__ import annotations

import pytest

from engram.stores.secrets import REDACTED, redact


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        # card data
        ("visa 4012 8888 8888 1881 exp 11/29, cvc 482", "4012 8888 8888 1881", "card_number"),
        ("visa 4012 8888 8888 1881 exp 11/29, cvc 482", "482", "card_security_code"),
        ("the security code is 0731", "0731", "card_security_code"),
        ("CVV2: 5521", "5521", "card_security_code"),
        ("信用卡安全码 338", "338", "card_security_code"),
        ("backup card number 5105-1051-0510-5101-0", "5105-1051-0510-5101-0", "card_number"),  # not Luhn
        ("我的银行卡 6217 0033 1000 2345 678 先绑上", "6217 0033 1000 2345 678", "card_number"),
        # passwords, passcodes, PINs
        ("wifi is HomeNet, password Blue-Otter-42", "Blue-Otter-42", "password"),
        ("admin pwd: qwerty", "qwerty", "password"),
        ("phone PIN 90210", "90210", "password"),
        ("the door code is 4471", "4471", "password"),
        ("登录密码 Mao2024ok", "Mao2024ok", "password"),
        ("支付密码是 135790", "135790", "password"),
        ("邮箱口令：Sunny_Day9", "Sunny_Day9", "password"),
        ("验证码 604218 别发给别人", "604218", "password"),
        ("the garage code is 2580", "2580", "password"),
        ("gate combination 7719", "7719", "password"),
        ("the med room door code is 4471# and i keep forgetting it", "4471", "password"),
        ("keypad code is *0042", "0042", "password"),
        ("the pin for the side door is 3390", "3390", "password"),
        ("门禁码 6622# 记一下", "6622", "password"),
        ("combo for the bike lock is 12-34-56", "12-34-56", "password"),
        ("wifi pass: sunnyday99", "sunnyday99", "password"),
        ("The key safe by the back door is 4719.", "4719", "password"),
        ("支付密码我输了好几遍258369 是不是被锁了", "258369", "password"),
        # a value to come, a lock named with its combination, a keypad code, 密码设的
        ("the guest wifi pw is gonna be Pine-Cone-3318 lol", "Pine-Cone-3318", "password"),
        ("the new password will be Zq-77-Harbor", "Zq-77-Harbor", "password"),
        ("the shed has a combo lock, its 9-2-7-4 dont forget", "9-2-7-4", "password"),
        ("combination lock on my locker is 31-07-22", "31-07-22", "password"),
        ("storage cage at work, code is 4682* , remind me", "4682", "password"),
        ("我邮箱密码设的 Qm20010523#x 老忘", "Qm20010523#x", "password"),
        # an API secret; a Chinese password a few words after its name, no 是 or colon
        ("the GA4 api secret is hT4kQz91LmXw0Rb, where does it go", "hT4kQz91LmXw0Rb", "api_token"),
        ("登录 密码 我 老忘 你 记 一下 Gk2025@wh 用户名 就是 我", "Gk2025@wh", "password"),
        ("登录密码我老忘 你记一下Gk2025@wh", "Gk2025@wh", "password"),
        # identity documents
        ("my SSN is 219-09-9999", "219-09-9999", "national_id"),
        ("social security number: 078-05-1120", "078-05-1120", "national_id"),
        ("passport no. 533 380 006, renewing it soon", "533 380 006", "national_id"),
        ("NI number QQ 12 34 56 C", "QQ 12 34 56 C", "national_id"),
        ("national insurance number AB 12 34 56 D", "AB 12 34 56 D", "national_id"),
        ("driver's license D1234-56789-0123", "D1234-56789-0123", "national_id"),
        ("身份证号 110101199003077777", "110101199003077777", "national_id"),
        ("护照号码 E12345678", "E12345678", "national_id"),
        # tokens after a telling word, and known formats
        ("api key 9f8e7d6c5b4a39281706abcd", "9f8e7d6c5b4a39281706abcd", "api_token"),
        ("the deploy token is tk_live_Q7w8E9r0T1y2U3i4", "tk_live_Q7w8E9r0T1y2U3i4", "api_token"),
        ("密钥 a1b2c3d4e5f6g7h8i9j0 放环境变量", "a1b2c3d4e5f6g7h8i9j0", "api_token"),
        ("use sk-ant-api03-AbCdEfGhIjKlMnOpQrSt", "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt", "openai_key"),
        ("push with glpat-4Hk2Lm9Qr7Tz1Vx8", "glpat-4Hk2Lm9Qr7Tz1Vx8", "gitlab_token"),
        ("推送报 401，key 是这个 AAAAb3Kq9Zx:APA91bE7uQw2Lr5Tn8Vc1Xs4Pd 你看看",
         "AAAAb3Kq9Zx:APA91bE7uQw2Lr5Tn8Vc1Xs4Pd", "fcm_server_key"),
        ("HF hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa0987654321", "hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa0987654321", "huggingface_token"),
        ("curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA==", "basic_auth"),
        # connection strings and environment files
        ("DATABASE_URL=postgres://app:Wint3r!@10.0.0.5:5432/shop", "app:Wint3r!", "url_credentials"),
        ("REDIS_URL=redis://:hushhush@cache:6379/0", ":hushhush", "url_credentials"),
        ("连不上 root:Xq7#pLm2!vK@tcp(10.2.0.8:3306)/orders", "Xq7#pLm2!vK", "dsn_credentials"),
        ('dsn := "app:s3cr3t@Pass@unix(/tmp/mysql.sock)/shop"', "s3cr3t@Pass", "dsn_credentials"),
        ("Server=sql01;User Id=report;Password=Gr33n;Encrypt=true", "Gr33n", "password"),
        ("STRIPE_WEBHOOK_SECRET=whsec_abc123", "whsec_abc123", "password"),
        ("export PGPASSWORD=kitten77", "kitten77", "password"),
    ],
)
def test_secrets_are_redacted(text, secret, kind):
    result = redact(text)
    assert secret not in result.text and REDACTED in result.text
    assert kind in result.kinds


def test_redaction_keeps_the_words_around_the_secret():
    result = redact("user shop_rw password K3ys!x on db-02, port 5433")
    assert result.text == f"user shop_rw password {REDACTED} on db-02, port 5433"
    assert not result.only_secret


@pytest.mark.parametrize(
    "text",
    [
        "my password is Gr8-Lakes",
        "PIN 4821",
        "CVV 208",
        "密码 Xy#2026!ab",
        "支付密码是 112233",
        "my SSN is 219-09-9999",
        "passport number X1234567",
        "我的身份证号是 110101199003077777",
    ],
)
def test_a_text_that_is_only_a_secret_says_so(text):
    assert redact(text).only_secret


@pytest.mark.parametrize(
    "text",
    [
        # ordinary numbers
        "the api listens on port 8443 behind 172.16.4.10",
        "call me at +44 20 7946 0958 or 13912345678",
        "released v2.14.3 on 2025-11-03 at 14:30",
        "the budget is 12000 and the invoice 2025-0042 is paid",
        "tracking number 9400 1000 0000 0000 0000",
        "expires 09/28",
        "我的手机号是 13912345678",
        "版本 1.22.4，端口 9090",
        # telling words followed by something that is not a secret
        "my password manager is Bitwarden",
        "the password reset flow sends an email",
        "the token limit is 8192",
        "the key is to keep functions small",
        "the secret is patience",
        "pin numpy to 1.26 in requirements",
        "we do a security code review every sprint",
        "passwordHash is a bcrypt column",
        "MAX_TOKENS=2048",
        "密码太简单了，得改一下",
        "验证码一直收不到",
        "I renewed my passport last week",
        "the SSN field is required",
        "the issue id number is 4521",
        "我的身份证过期了",
        "wifi pass is free at the cafe",
        "I ordered the burger combo for 12",
        "the password is still wrong",
        "密码还是错的",
        "my birthday is 0316 and my pin is different",
        "my password is the name of our street",
        "the password is going to expire soon",
        "the password will be required on login",
        "the combo lock is broken",
        "zip code is 94110 and the error code is 1603",
        "the code is 1234 lines long",
        "dial *611 for support",
        "密码设的太简单了",
        "密码要求 8 位以上 含字母数字和符号",
        "api secret rotation is scheduled for monday",
        "the api secret is wrong",
        "改密码的工单 SEC-2024#4 还没处理",
    ],
)
def test_ordinary_text_is_left_alone(text):
    result = redact(text)
    assert result.text == text and result.kinds == []


def test_every_memory_write_is_redacted_even_one_that_skipped_the_write_policy():
    """An access update rewrites memories stored before a redaction rule existed: redacted."""
    from engram.stores.memory.types import Memory, memory_put

    memory = Memory.new("I back up with AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                        "fact", 0.8, now="2026-01-01T00:00:00+00:00",
                        structured_data={"dsn": "redis://:hushhush1@cache:6379/0", "port": 6379})
    value = memory_put(("memories", "u"), memory).value
    assert value["content"] == f"I back up with {REDACTED} / {REDACTED}"
    assert value["structured_data"] == {"dsn": f"redis://{REDACTED}@cache:6379/0", "port": 6379}


def test_a_recorded_failure_does_not_quote_a_secret():
    from engram.nodes.failures import record_failure

    entry = record_failure("extract", ValueError("bad input_value='my password is Tr0ub4dor&3'"))
    assert "Tr0ub4dor&3" not in entry["error"] and REDACTED in entry["error"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My AWS key pair is AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
         f"My AWS key pair is {REDACTED} / {REDACTED}"),
        ("my login is alice / Tr0ub4dor&3", f"my login is alice / {REDACTED}"),
        ("pw Gl4cier-77 for the NAS", f"pw {REDACTED} for the NAS"),
        ("the wifi password is 'correct horse battery staple'", f"the wifi password is '{REDACTED}'"),
        ("postgresql://report:p@ss-w0rd@10.0.0.5/analytics", f"postgresql://{REDACTED}@10.0.0.5/analytics"),
        ("root:Xq7#pLm2!vK@tcp(10.2.0.8:3306)/orders?parseTime=true",
         f"{REDACTED}@tcp(10.2.0.8:3306)/orders?parseTime=true"),
        ("reach it over tcp(10.2.0.8:3306) as app@tcp(db:3306)/shop",
         "reach it over tcp(10.2.0.8:3306) as app@tcp(db:3306)/shop"),  # no password: nothing
    ],
)
def test_the_whole_secret_goes_and_the_words_around_it_stay(text, expected):
    assert redact(text).text == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the password is required", "the password is required"),
        ("密码是多少？", "密码是多少？"),
        ('the password is "correct"', f'the password is "{REDACTED}"'),  # quoted: taken as said
        ("the password is sunshine99", f"the password is {REDACTED}"),
    ],
)
def test_a_word_about_the_secret_is_not_the_secret_unless_quoted(text, expected):
    assert redact(text).text == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the pin is still 4321", f"the pin is still {REDACTED}"),
        ("my password is just hunter2", f"my password is just {REDACTED}"),
        ("我密码还是abc123", f"我密码还是{REDACTED}"),
        ("密码一直是sunshine88", f"密码一直是{REDACTED}"),
        # what the secret is for, said at length before it
        ("gate code for the Merewether job tmrw is 2580# so i dont forget", f"gate code for the Merewether job tmrw is {REDACTED} so i dont forget"),
        ("the password for my old work email at acme is Tr0ub4dor!", f"the password for my old work email at acme is {REDACTED}!"),
    ],
)
def test_an_adverb_or_a_long_qualifier_before_the_value_does_not_hide_it(text, expected):
    assert redact(text).text == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my pin is my birthday 0316", f"my pin is {REDACTED}"),
        ("my pin is my birthday", f"my pin is {REDACTED}"),
        ("the door code is my son's birthday, 0412", f"the door code is {REDACTED}"),
        ("the pin is the last four of my phone 5521", f"the pin is {REDACTED}"),
        ("my password is my dog's name", f"my password is {REDACTED}"),
        ("密码是生日 19880316", f"密码是{REDACTED}"),
        ("银行卡密码是我生日 880316", f"银行卡密码是{REDACTED}"),
        ("wifi密码就是手机号 13912345678", f"wifi密码就是{REDACTED}"),
        ("支付密码是我手机尾号后六位", f"支付密码是{REDACTED}"),
    ],
)
def test_a_secret_said_to_be_a_personal_number_goes_with_its_description(text, expected):
    """The birthday or phone number may be in the memories: the description would give the
    secret away."""
    assert redact(text).text == expected
