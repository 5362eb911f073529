/* SPDX-License-Identifier: BSD-3-Clause */
/* check_relay_crypto.c -- unit tests for core/crypto/relay_crypto: tor1
 * relay cell encryption and running digests (tor-spec 5.5, 6.1).
 *
 * The known-answer vectors below were computed independently by
 * tests/vectors/relay_crypto_ref.py (Python, from the spec text): three
 * hops with fixed key material; a forward cell to hop 3 shown after each
 * layer, a second forward cell to hop 2, a backward cell from hop 3 shown
 * after each layer and a backward SENDME from hop 1. The remaining tests
 * are origin <-> relay round trips over three hops and the rules for
 * cells that are not recognized (running digests stay as they were).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto/relay_crypto.h"
#include "lib/crypt/crypt_init.h"
#include "lib/crypt/rand.h"

Suite *suite_relay_crypto(void);

/* ---- tests/vectors/relay_crypto_ref.py output ---- */
static const char km1[] =
  "1114171a1d202326292c2f3235383b3e4144474a4d505356595c5f6265686b6e"
  "7174777a7d808386898c8f9295989b9ea1a4a7aaadb0b3b6b9bcbfc2c5c8cbce"
  "d1d4d7dadde0e3e6";
static const char km2[] =
  "2225282b2e3134373a3d404346494c4f5255585b5e6164676a6d707376797c7f"
  "8285888b8e9194979a9da0a3a6a9acafb2b5b8bbbec1c4c7cacdd0d3d6d9dcdf"
  "e2e5e8ebeef1f4f7";
static const char km3[] =
  "3336393c3f4245484b4e5154575a5d606366696c6f7275787b7e8184878a8d90"
  "9396999c9fa2a5a8abaeb1b4b7babdc0c3c6c9cccfd2d5d8dbdee1e4e7eaedf0"
  "f3f6f9fcff020508";
static const char F1_plain[] =
  "02000012347c912af4001068656c6c6f2c20746f722072656c61790000000040"
  "4142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60"
  "6162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f80"
  "8182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0"
  "a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0"
  "c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0"
  "e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff00"
  "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"
  "2122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f40"
  "4142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60"
  "6162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f80"
  "8182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0"
  "a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0"
  "c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0"
  "e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff00"
  "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d";
static const char F1_digest[] =
  "7c912af4808d07468e53fc4524d90780c761187e";
static const char F1_after_layer3[] =
  "64b3ba4e6cc04511c015849a0005a1c2c444bf6516f391633b4a9e992a04420f"
  "75a8533faae923d91c721fe5be91ed2705a1fcacf696e5b255594141f4275014"
  "9f384ea95673e394d9cba842ad6a64fc43b9a28291dd092ed8fa7c9f26c8caa6"
  "94ae873fd6bdd6461a0cf7be54e72f5602a718fd6d3a270da69ed675efdb1cfe"
  "997ab3b3a1fa9088b249ce12c6dc9f1688adff6ce199978b40bb5c92883e1532"
  "266c6f8cbeab0e6ae04bff385c2b58ada44faad9f2f78758b966573c57577171"
  "aad61eb8d643327dde79c0b0a36fb8b48594db50378a2f9c91424911f67fecf7"
  "0231901597a80421f00c4cee9c4f8ad7b4ff7b0955b82f6542c56940d3f3d07d"
  "4233613f56953aef322feccaa091a423ac22eb89af0757fcca1c1990194a924f"
  "f17b911504156f4cfc8aeaadbd2f7d9faca02ca0c9eb41c6e39cdb15e91c252e"
  "3f27a2bbb1c432e65ca640963f5ba50d9cc59d339cca66931c45158ec8737f0e"
  "58ef1e16449d7e1138c8be859544b650e519bbde3ffaf9832d21a1382fafa723"
  "1a60a2e4e6fcc763f80834397482323acb20ed5414ab00cb2f3cf735f70529f9"
  "c0996c4816e543baad528382411c015bc41f613bc2e5f78a3df0beeae95f97f1"
  "7defa61fe5e6c9e2238dddb2ced34a693e9dbafe5965c1a4a22bc461f66b205f"
  "85257ce962d28eb8b31c3910d250b19548299bd4ad4948772bdf694bc1";
static const char F1_after_layer2[] =
  "b9f388626ee48a71ab7da22cee538f44268145b432e8b962c8ffb8fd60ec74cf"
  "7784ccba00c8c4eb8d9a3503af09ddd4e3f9a2b0e89fafd8aec93a8ea9f64ee8"
  "3127ce7e3592920a1e3ed84485374813555085117e96ef7970a9bb1048a1f2ac"
  "2e048cacc4f39cdf7d63616bc06077341944a1ff017b8c008aed1fe1d35703d6"
  "bfd01f4f31f420479f3d74dd46577cbe7fff6b77183267ff3b9c05de09719dfa"
  "7ea5f4d84d66b9b4ffadeff020962b30c8408b7226b7854e08c9ea0f2cd8765e"
  "805db139a8674103fc2581998830359e9569da86580a5906d19421c1e05aeb05"
  "a196f2d07a21f732c7f8c869ed23826699102cabfe2571bccef779dcc4d44efc"
  "cbc72234e8a292528374e336efca415429e8426bbd6ac8b9f5b32baee2ac23a5"
  "8c56c49fc309f370ae7cd94599d72e80e170030c14c83b514bf613a51a53d846"
  "dd55843cb6983a1b2c81953c3e46e04f5c0b8a847e3252be5ff23e4a6d78adc9"
  "900ecad5b33645b5e6383ab2acf47355fb53b768429603142bb4c9819d83c1f9"
  "bc8b3957fbafaa9e93bd389c4106ae8563cb793f279ddd8c527af4b0753015f4"
  "16c9914a4ee0fecf2b7e36ee4ea3544beb42380dc9a82c008e25790fcc24b519"
  "a872c622d8f51dcbe0a59efaeb014437e2b5422a79233281f2f92713ad1aa7c9"
  "175e523c025df461814a471a741162a0886fc0235d2439f07ee1b3155c";
static const char F1_after_layer1[] =
  "93842157bc4364b6d7544321cbd785d0af29ff7676f5d3e67a218910dabbdb73"
  "ddbaeec1942c87b55da5a129be10ea353455b55c9241d7d49e6e491e77b89a5b"
  "cdf0e5e94aef5e9a68b7e9518a4bc363d7d6279cb0f205425a1d037dc9e53893"
  "2852ff8d79dfc2f750325d7d34328e74a953684604c76bccffaa4f1d9b84b78c"
  "a988e64fbe32b9a55537e2d323ddfe55d454a7a6328e1b1bbbebf7e060872b03"
  "0c0f9c3315a6a6b2b4752b5d891413ba6b2972e27d22ce21be63c0b816882f77"
  "29d4eef77ddab0a9bea95e4de0d7766d29407c91f8792fad160d5ae2aaec92bc"
  "7410d3d1684616e86626fdab1d96a0c9438e553185853615c3d5cf44ab673d90"
  "2bed4e15c01bce62e051df42aa83ee0165d5be284bbd6382fef492a306ce8d61"
  "29db656267b7e4d4786c2a946424f89f0638a1ce3fa7ef302b8ef2e2cdb6474f"
  "b4c4991737d33cc5ae385f38228f235a6b46d09d09f1a0c340e7af015df31c56"
  "b3d33664eb96adf3b94edd8edde0db6bd980025e29e0deb124fc912eb2f8c2cb"
  "a942ac729d14b22c9aacad3b5bb93c56ce3199e5787d4ff45fbe7287ddd3e61b"
  "2322221e6122db676454dce123c180483b88eb57a9c5a49172f03cbd6020e967"
  "3925829091938a68d8495c1251de72d0e265e9b7b991b9b1e5d2cc1d84084597"
  "b77d5c485d548e93b4b711902b0119adc26e18cc1fd3b3dfd9ad4d1802";
static const char F2_plain[] =
  "02000007771aff7366000b7365636f6e642063656c6c00000000909192939495"
  "969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5"
  "b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5"
  "d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5"
  "f6f7f8f9fafbfcfdfeff000102030405060708090a0b0c0d0e0f101112131415"
  "161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435"
  "363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455"
  "565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475"
  "767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495"
  "969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5"
  "b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5"
  "d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5"
  "f6f7f8f9fafbfcfdfeff000102030405060708090a0b0c0d0e0f101112131415"
  "161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435"
  "363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455"
  "565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172";
static const char F2_digest[] =
  "1aff736610e2201f1aff9bf796bea47a08e2c0a7";
static const char F2_wire[] =
  "ad8e17491d63da87654e6c6f89d4475565a8033d36c707d743b800d605f67e92"
  "c370f9f6fdff024a99e7ee2a11a68d185c750567b2fd2d2f4fa387438470b521"
  "85c1e4152dd6b5d74f54564c787dfdedfc1e3da724e24c0e894c4c04cc2f3b42"
  "ece9f4ed9b98f81c575c2b6faae8461f8dcfcd017dd9f9f2bf60433933dbcd33"
  "31229f185fa57156795a86f4e640c5a2f4643af61ea9e48a47bb33b78a3b9503"
  "451e813da5fb8bdaa8833651aa4811fb13ca981d3b6196371c51044851ac1977"
  "a1e1672f1edb6864465067cb7b51f15b77fda9ea20f94475dddf590d78ab74e2"
  "3e9e6aa6f436c6afc8163a425bebfbbbb9fc153586be275eacb1de0f28b34e68"
  "0744ceb3d78486397dcd53a4d76ba62cf337a6f58edd0c631e6e6a17022eecc1"
  "48185a357d5dbaf3ab3fc66b480acc8ef1458dcbc617b48851b53ea3fcbfc26d"
  "d8846a593b035d20572eb590ceb91c68851baeaabd69340f424d3ea20810d715"
  "b29e13ac6d61e9b789fc7b972df4d72bb86309236994082bc4bd1affa35bb147"
  "e0c7dd5436498d75698f774d41ca308acbe9c3619e4c54f22046813c3bedefe8"
  "daa81db3722742298d4fd921579633e1184b9c31f1186984db7d529ee75d3c13"
  "2f9efd2a6c3e8c09ae86c1decb434d38ca89900566efecd52ec44c7523add158"
  "9b1a4479c6d207cdb60b7830a99c9f4c008777cc4df5cae7b91e931810";
static const char B1_plain[] =
  "0200001234fdddf1bc00137265706c792066726f6d2074686520657869740000"
  "0000202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d"
  "3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d"
  "5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d"
  "7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d"
  "9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbd"
  "bebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdd"
  "dedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfd"
  "feff000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d"
  "1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d"
  "3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d"
  "5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d"
  "7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d"
  "9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbd"
  "bebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdd"
  "dedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fa";
static const char B1_digest[] =
  "fdddf1bc94491b49392fc82a59ec6507d3179af2";
static const char B1_after_layer3[] =
  "37c4b9a860bf5a1bf3c33fae8946bc0701d1e47457d3a4d80c65b821386664a6"
  "794e8e6a75eb0d66f7c4db20c36432723e3ec02f8d4214cceac86b9e6da02b3b"
  "160737b7ff78eed88caff68de1b13ad3c2c6c5718eb0ae4092b969f639cb9c12"
  "cf91d0878669b195402142d6361923ff772f230244742658aee4ba84e5ac8cb8"
  "2debb5360b95fad4a08c11c418fe43034c67c137fbec983afa5acc0e7d2b109d"
  "fe680d445325f91e96fed7edd243ead1285ba318d69c27030f0cd7492fbcd3c0"
  "06847566a4ea32e8676bf99d5d63b68932d411538dd7f71996488555b26a09db"
  "5a687abcdfbcc7d67b3a4fabbf71023086d94a20634d083646a01774cea62593"
  "0f728901a57a7f885eb71ece9fd8ca9690e29b8d5ccf9a36d3d22d458d99907f"
  "66d15d1a14cca4934e0e86e42f646e7eea435eb06b386b27a7e117ef34d6692a"
  "7eaa9aaa1a2675af2917ecff7264d74fe47fbe2829271fc3223471da3169728c"
  "81f04bf0fd892c3b527b67f3638f1c3f018e970a5dc18ef6ef20b8765104832c"
  "58db0d5666c3bbe22419d6eb81f90244eaa61c11564855a031f894d93d6333bf"
  "9be2af69386eea4929fe258871471675bdfb4de48497dc8661432f7f6f2c97fe"
  "baeb138e110c90d4cb7720759ccdd1b6cc9410d8c2255149526ada98e8f0a698"
  "23291e70eb90ed89c0ce53f44b2754e1e5850ff596448a4bba10734ffd";
static const char B1_after_layer2[] =
  "f9208e2121b481afde1f7250356f64ac6f14a68888c4abd867305e09ba54c76f"
  "ebe40ab9e0d4a2b8d5ad381b1977716b9d5427bc61d57d1d54caeda8476c6ce6"
  "670c9cfa004c019ee944c37d331fd6e8bd2be72232864abf3007a385d3b2f398"
  "ec5c6694067c2699603f580cea485d31de8aaddfe58df73556dc0eb8903baa16"
  "bbceccaa88d34c9feefbf8d11956e7188ded46203532b5daf61104a6c3533be2"
  "12a27e870641482d4b4971a763d3dc692f54519b537bce062eb5c8d5b053c20a"
  "98e22bfa6de6b48367856faf1dbfa87d1d52f4f0bb05d3a96c01ebe1228ad05d"
  "84942d291631090b7fe8af90f026e425b7f9607d00a653aafae349b1e9afbe81"
  "4b6d49c0aef70e354d813f6aa629da9359ede493016ff27e6ada25154184fd76"
  "4b9bbce5dff7f2a3f5e5d96e9723708fe7ab1157318579e9a17ca55382574621"
  "c04b937613c63d7bc2f67846f22620e69eab570c837dd9c37631bd0dc9ce6e53"
  "0a0afd872193861146af3aeb69c42a2f3dd30eaeb085663fe187cd291e6f6a43"
  "d079f20cad266d885b75934d5fe4a9a53c0ae1550181495140ae011d72cd4516"
  "88c8b4423c40ad8754b85f094233990f1604f17e6d4f6cd1aa93dbabb63f36e0"
  "e0e88a256e90dc22dd3428908f783834dfac24d379a253ccd536ffbf0bd1c2c8"
  "defcd2aa7b6913aae57cff5aba565be6d66667aa342c52661dbe9cc820";
static const char B1_after_layer1[] =
  "b0eb0f3d515d42ed472a3582ce745adef11f671a85ebc62d05e4b6f2464da33a"
  "99548242a124aa05b61a43fc1768406565fdbde82f4e46a53a303632cfbf7ce8"
  "c49d981efd9e3c8c163a1099c63aadb6ab527bb71fbe5d0f53d963081ff81d14"
  "4e654529fa2d041fa1a937c6a6336244e9868ed93c42a901aeebfee4aec5bee3"
  "19602b37a470732ccee8fdcc71ea08a5c5653601e875fab886a10e9fbc0a990d"
  "edeb239364a528035590ffb23f494f89ce5067824e7fe190945ec1b23c30484c"
  "ba2c2cb7fe8abee86008156fab4df4e4a73eda7de297d1793c35ffe6117b48cc"
  "fa915f3fb20cf83ce0da1cb27d2e70582155f07a0a8b0b16d8022a181e1b8560"
  "35bcfa427446d4b6b04f432d16b969ea596bffaaf5fd116c4af317e6ce9547ae"
  "576f8c8b85ce4cb3e703ae725738eff8bce0b58000a84e8ad6279a565ab2ab51"
  "de67227661c3890b074fd8bd720a2dda81227499e44afb7e9b440fce81b2d07c"
  "e42e8bbe2c1997a6aee85881118c37467ddaaf761a7d376c94229041c26ea4a8"
  "848c0ff6bbe944d9cd0c6e8e47e3f62fc03866d1080e18fd2c02438090e575ef"
  "8b538d902fb50902c92acb6e02280f4a5cf41fc8a08bb2ece76ba1ac77dd69dc"
  "8fd5054c983e8c4750fbadc14418ad0d58f45e394220a79ec974e7675aeb7d8f"
  "0aba1464412650c0c3b2fbf4f190bf52cf987c06245343521dd0bed0f6";
static const char B2_plain[] =
  "050000000085a16731000300000000000000000102030405060708090a0b0c0d"
  "0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d"
  "2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d"
  "4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d"
  "6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d"
  "8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacad"
  "aeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccd"
  "cecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebeced"
  "eeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff000102030405060708090a0b0c0d"
  "0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d"
  "2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d"
  "4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d"
  "6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d"
  "8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacad"
  "aeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccd"
  "cecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9ea";
static const char B2_digest[] =
  "85a16731a3142168cef665ba96b28c4f5464fa66";
static const char B2_wire[] =
  "d09e7f441fd57e584bb222264875d0c7031a1380422472aa1440a12cbb38f28b"
  "66b22c31dc10e13a64da5682a82e1c6f0f1db2118fe3b432287d38e5b435f60a"
  "ad6bf21c6889b01d08679fb4fbd44b9e311b6b0f5d6efc89edb3dc4abb9daa44"
  "b4963c920f97bdb8eae90e66fd19d65caa7a043a290ce00687fc798b3bb09e51"
  "89af6e67408def6a98ca33e6832de21b3d5b3c21ea453d524102151716ef5444"
  "ea81bdf9e31325c261154b3fd6d7f04fa7fae49aba6804ecd223ad3f6aaea6d5"
  "38a83bb016ace7b4e5be212e06db84167cda1033d9eb80cc306284825ec7c077"
  "047c7672d85b2b2b0477906c23c40da7f6a690259b49954a8223cc6673602dbf"
  "ffb3dc69096be92b189232eb1d33fc4388b4c52ac049e579223eab4f816cc5ee"
  "57e2c52fdeb5c947a1207ea3b2834808752f4f545ff35496710878374bed9435"
  "ee945208a1295a4d6664a8b00de4497882f7e4a5c5e9261737b1d120c55d714f"
  "5cfbd6b5708b421bb930a5ff5a5a8bbda4b53c0012defa20e163e8ea5fc4c0c5"
  "cbe5b7c020a4832236aff0699ca929585ee25782d29896604ff388b3c72ba826"
  "38302b209151bb0d795922a26774612be7e3332bd54b372a78138d6a55af51a5"
  "9dff84a67b1991223d31b2228e672d7fc78e3239b19a5c6b8b06f7edfea776f5"
  "865aae9e0a5b312987ec7ebc38875470b102d497fc684079d714503270";

static size_t
unhex(uint8_t *out, size_t cap, const char *hex)
{
  size_t n = strlen(hex) / 2;
  ck_assert_uint_le(n, cap);
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
    out[i] = (uint8_t)v;
  }
  return n;
}

static void
cell_from_hex(uint8_t cell[CELL_PAYLOAD_LEN], const char *hex)
{
  ck_assert_uint_eq(unhex(cell, CELL_PAYLOAD_LEN, hex), CELL_PAYLOAD_LEN);
}

#define ck_assert_cell_eq(cell, hex)                                     \
  do {                                                                   \
    uint8_t exp_[CELL_PAYLOAD_LEN];                                      \
    cell_from_hex(exp_, (hex));                                          \
    ck_assert_mem_eq((cell), exp_, CELL_PAYLOAD_LEN);                    \
  } while (0)

#define ck_assert_digest_eq(d, hex)                                      \
  do {                                                                   \
    uint8_t exp_[RELAY_CRYPTO_DIGEST_LEN];                               \
    ck_assert_uint_eq(unhex(exp_, sizeof(exp_), (hex)),                  \
                      RELAY_CRYPTO_DIGEST_LEN);                          \
    ck_assert_mem_eq((d), exp_, RELAY_CRYPTO_DIGEST_LEN);                \
  } while (0)

/* A plaintext cell as the caller hands it to us: the vector's plaintext
 * with the digest field still zero. */
static void
plain_without_digest(uint8_t cell[CELL_PAYLOAD_LEN], const char *hex)
{
  cell_from_hex(cell, hex);
  memset(cell + RELAY_OFF_DIGEST, 0, 4);
}

typedef struct {
  relay_crypto_t *origin[3]; /* the client's view of hops 1..3 */
  relay_crypto_t *relay[3];  /* each relay's own state */
} circ_t;

static void
circ_init(circ_t *c, const char *const km_hex[3])
{
  for (int i = 0; i < 3; i++) {
    uint8_t km[RELAY_CRYPTO_KEY_MATERIAL_LEN];
    if (km_hex) {
      ck_assert_uint_eq(unhex(km, sizeof(km), km_hex[i]), sizeof(km));
    } else {
      crypt_rand(km, sizeof(km));
    }
    c->origin[i] = relay_crypto_new(km);
    c->relay[i] = relay_crypto_new(km);
  }
}

static void
circ_clear(circ_t *c)
{
  for (int i = 0; i < 3; i++) {
    relay_crypto_free(c->origin[i]);
    relay_crypto_free(c->relay[i]);
    ck_assert_ptr_null(c->origin[i]);
  }
}

static void
setup(void)
{
  ck_assert_int_eq(crypt_global_init(), 0);
}

START_TEST(test_known_answer)
{
  static const char *const kms[3] = { km1, km2, km3 };
  static const uint8_t zero[RELAY_CRYPTO_DIGEST_LEN] = { 0 };
  uint8_t cell[CELL_PAYLOAD_LEN];
  circ_t c;
  circ_init(&c, kms);
  ck_assert_mem_eq(relay_crypto_last_digest(c.origin[2], RELAY_DIR_FORWARD),
                   zero, sizeof(zero));

  /* F1: the origin packages a cell for hop 3 ... */
  plain_without_digest(cell, F1_plain);
  relay_crypto_origin_encrypt(c.origin, 2, cell);
  ck_assert_cell_eq(cell, F1_after_layer1);
  ck_assert_digest_eq(relay_crypto_last_digest(c.origin[2],
                                               RELAY_DIR_FORWARD),
                      F1_digest);
  /* ... and each relay peels one layer; only hop 3 recognizes it. */
  ck_assert_int_eq(relay_crypto_decrypt_forward(c.relay[0], cell), 0);
  ck_assert_cell_eq(cell, F1_after_layer2);
  ck_assert_int_eq(relay_crypto_decrypt_forward(c.relay[1], cell), 0);
  ck_assert_cell_eq(cell, F1_after_layer3);
  ck_assert_int_eq(relay_crypto_decrypt_forward(c.relay[2], cell), 1);
  ck_assert_cell_eq(cell, F1_plain);
  ck_assert_digest_eq(relay_crypto_last_digest(c.relay[2],
                                               RELAY_DIR_FORWARD),
                      F1_digest);
  ck_assert_mem_eq(relay_crypto_last_digest(c.relay[0], RELAY_DIR_FORWARD),
                   zero, sizeof(zero));

  /* F2: to hop 2; hops 1 and 2 continue their keystreams. */
  plain_without_digest(cell, F2_plain);
  relay_crypto_origin_encrypt(c.origin, 1, cell);
  ck_assert_cell_eq(cell, F2_wire);
  ck_assert_digest_eq(relay_crypto_last_digest(c.origin[1],
                                               RELAY_DIR_FORWARD),
                      F2_digest);
  ck_assert_int_eq(relay_crypto_decrypt_forward(c.relay[0], cell), 0);
  ck_assert_int_eq(relay_crypto_decrypt_forward(c.relay[1], cell), 1);
  ck_assert_cell_eq(cell, F2_plain);
  ck_assert_digest_eq(relay_crypto_last_digest(c.relay[1],
                                               RELAY_DIR_FORWARD),
                      F2_digest);

  /* B1: hop 3 originates a backward cell; hops 2 and 1 add layers. */
  plain_without_digest(cell, B1_plain);
  cell[RELAY_OFF_RECOGNIZED] = 0x99; /* originate must clear it */
  relay_crypto_originate_backward(c.relay[2], cell);
  ck_assert_cell_eq(cell, B1_after_layer3);
  ck_assert_digest_eq(relay_crypto_last_digest(c.relay[2],
                                               RELAY_DIR_BACKWARD),
                      B1_digest);
  relay_crypto_encrypt_backward(c.relay[1], cell);
  ck_assert_cell_eq(cell, B1_after_layer2);
  relay_crypto_encrypt_backward(c.relay[0], cell);
  ck_assert_cell_eq(cell, B1_after_layer1);
  ck_assert_int_eq(relay_crypto_origin_decrypt(c.origin, 3, cell), 2);
  ck_assert_cell_eq(cell, B1_plain);
  ck_assert_digest_eq(relay_crypto_last_digest(c.origin[2],
                                               RELAY_DIR_BACKWARD),
                      B1_digest);

  /* B2: a SENDME from hop 1. */
  plain_without_digest(cell, B2_plain);
  relay_crypto_originate_backward(c.relay[0], cell);
  ck_assert_cell_eq(cell, B2_wire);
  ck_assert_int_eq(relay_crypto_origin_decrypt(c.origin, 3, cell), 0);
  ck_assert_cell_eq(cell, B2_plain);
  ck_assert_digest_eq(relay_crypto_last_digest(c.origin[0],
                                               RELAY_DIR_BACKWARD),
                      B2_digest);
  ck_assert_digest_eq(relay_crypto_last_digest(c.relay[0],
                                               RELAY_DIR_BACKWARD),
                      B2_digest);
  circ_clear(&c);
}
END_TEST

/* A random relay cell for the round trips. */
static void
random_cell(uint8_t cell[CELL_PAYLOAD_LEN], uint8_t cmd)
{
  crypt_rand(cell, CELL_PAYLOAD_LEN);
  cell[RELAY_OFF_COMMAND] = cmd;
  cell[RELAY_OFF_LENGTH] = 0x01;
  cell[RELAY_OFF_LENGTH + 1] = 0xf2;
}

/* The part of a cell its sender chose (everything but recognized and
 * digest) must arrive unchanged. */
static void
assert_same_content(const uint8_t *a, const uint8_t *b)
{
  ck_assert_uint_eq(a[0], b[0]);
  ck_assert_mem_eq(a + 3, b + 3, 2);
  ck_assert_mem_eq(a + 9, b + 9, CELL_PAYLOAD_LEN - 9);
}

START_TEST(test_roundtrip_three_hops)
{
  circ_t c;
  circ_init(&c, NULL);
  uint8_t cell[CELL_PAYLOAD_LEN], sent[CELL_PAYLOAD_LEN];
  for (int round = 0; round < 300; round++) {
    int hop = (int)crypt_rand_u64_below(3);
    if (crypt_rand_u64_below(2)) {
      /* Forward: origin -> hop. */
      random_cell(sent, 2);
      memcpy(cell, sent, sizeof(cell));
      relay_crypto_origin_encrypt(c.origin, hop, cell);
      for (int i = 0; i <= hop; i++) {
        int rec = relay_crypto_decrypt_forward(c.relay[i], cell);
        ck_assert_int_eq(rec, i == hop);
      }
      assert_same_content(cell, sent);
      ck_assert_uint_eq(cell[1] | cell[2], 0);
      ck_assert_mem_eq(
          relay_crypto_last_digest(c.relay[hop], RELAY_DIR_FORWARD),
          relay_crypto_last_digest(c.origin[hop], RELAY_DIR_FORWARD),
          RELAY_CRYPTO_DIGEST_LEN);
    } else {
      /* Backward: hop -> origin. */
      random_cell(sent, 2);
      memcpy(cell, sent, sizeof(cell));
      relay_crypto_originate_backward(c.relay[hop], cell);
      for (int i = hop - 1; i >= 0; i--)
        relay_crypto_encrypt_backward(c.relay[i], cell);
      ck_assert_int_eq(relay_crypto_origin_decrypt(c.origin, 3, cell), hop);
      assert_same_content(cell, sent);
      ck_assert_mem_eq(
          relay_crypto_last_digest(c.relay[hop], RELAY_DIR_BACKWARD),
          relay_crypto_last_digest(c.origin[hop], RELAY_DIR_BACKWARD),
          RELAY_CRYPTO_DIGEST_LEN);
    }
  }
  circ_clear(&c);
}
END_TEST

/* Key material with the directions swapped (Db | Df | Kb | Kf): a state
 * built from it "originates backward" exactly the way an origin packages a
 * forward cell for a one-hop circuit, and its encrypt_backward adds the
 * forward layer without touching any digest. That lets a test put a cell
 * with recognized == 0 and a wrong digest in front of a relay while
 * keeping the sender's digest in step. */
static void
swap_directions(uint8_t out[RELAY_CRYPTO_KEY_MATERIAL_LEN],
                const uint8_t km[RELAY_CRYPTO_KEY_MATERIAL_LEN])
{
  memcpy(out, km + 20, 20);
  memcpy(out + 20, km, 20);
  memcpy(out + 40, km + 56, 16);
  memcpy(out + 56, km + 40, 16);
}

START_TEST(test_swapped_sender_matches_origin)
{
  /* Sanity check of the trick above against the real origin path. */
  uint8_t km[RELAY_CRYPTO_KEY_MATERIAL_LEN], sw[RELAY_CRYPTO_KEY_MATERIAL_LEN];
  uint8_t a[CELL_PAYLOAD_LEN], b[CELL_PAYLOAD_LEN];
  crypt_rand(km, sizeof(km));
  swap_directions(sw, km);
  relay_crypto_t *o = relay_crypto_new(km), *s = relay_crypto_new(sw);
  relay_crypto_t *const hops[] = { o };
  for (int i = 0; i < 3; i++) {
    random_cell(a, 2);
    memcpy(b, a, sizeof(b));
    relay_crypto_origin_encrypt(hops, 0, a);
    relay_crypto_originate_backward(s, b);
    ck_assert_mem_eq(a, b, sizeof(a));
  }
  relay_crypto_free(o);
  relay_crypto_free(s);
}
END_TEST

/* A cell whose recognized field is zero but whose digest is wrong is not
 * ours: it comes out byte for byte as decrypted (digest field included)
 * and the running digest and remembered digest stay as they were, so the
 * next genuine cell is still recognized. Checked at a relay (forward) and
 * at the origin (backward). */
START_TEST(test_unrecognized_leaves_digest)
{
  uint8_t km[RELAY_CRYPTO_KEY_MATERIAL_LEN], sw[RELAY_CRYPTO_KEY_MATERIAL_LEN];
  uint8_t cell[CELL_PAYLOAD_LEN], sent[CELL_PAYLOAD_LEN];
  uint8_t last[RELAY_CRYPTO_DIGEST_LEN];
  crypt_rand(km, sizeof(km));
  swap_directions(sw, km);
  relay_crypto_t *sender = relay_crypto_new(sw); /* origin, forward */
  relay_crypto_t *relay = relay_crypto_new(km);
  relay_crypto_t *origin = relay_crypto_new(km);
  relay_crypto_t *const path[] = { origin };

  for (int round = 0; round < 20; round++) {
    /* A genuine forward cell. */
    random_cell(sent, 2);
    memcpy(cell, sent, sizeof(cell));
    relay_crypto_originate_backward(sender, cell);
    ck_assert_int_eq(relay_crypto_decrypt_forward(relay, cell), 1);
    memcpy(last, relay_crypto_last_digest(relay, RELAY_DIR_FORWARD),
           sizeof(last));
    /* A forward cell with recognized == 0 and a random digest, encrypted
     * without touching the sender's digest. */
    random_cell(sent, 2);
    sent[1] = sent[2] = 0;
    memcpy(cell, sent, sizeof(cell));
    relay_crypto_encrypt_backward(sender, cell);
    ck_assert_int_eq(relay_crypto_decrypt_forward(relay, cell), 0);
    ck_assert_mem_eq(cell, sent, sizeof(cell));
    ck_assert_mem_eq(relay_crypto_last_digest(relay, RELAY_DIR_FORWARD),
                     last, sizeof(last));

    /* Backward: a genuine cell, then an unrecognizable one, at the
     * origin of a one-hop circuit. */
    random_cell(sent, 2);
    memcpy(cell, sent, sizeof(cell));
    relay_crypto_originate_backward(relay, cell);
    ck_assert_int_eq(relay_crypto_origin_decrypt(path, 1, cell), 0);
    memcpy(last, relay_crypto_last_digest(origin, RELAY_DIR_BACKWARD),
           sizeof(last));
    random_cell(sent, 2);
    sent[1] = sent[2] = 0;
    memcpy(cell, sent, sizeof(cell));
    relay_crypto_encrypt_backward(relay, cell);
    ck_assert_int_eq(relay_crypto_origin_decrypt(path, 1, cell), -1);
    ck_assert_mem_eq(cell, sent, sizeof(cell));
    ck_assert_mem_eq(relay_crypto_last_digest(origin, RELAY_DIR_BACKWARD),
                     last, sizeof(last));
  }
  relay_crypto_free(sender);
  relay_crypto_free(relay);
  relay_crypto_free(origin);
}
END_TEST

/* Any single-bit corruption of a cell on the wire makes it unrecognized at
 * its destination (the digest covers all 509 bytes; a flip in
 * 'recognized' already fails the cheap test). */
START_TEST(test_corrupted_not_recognized)
{
  static const size_t where[] = { 0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 200,
                                  CELL_PAYLOAD_LEN - 1 };
  uint8_t cell[CELL_PAYLOAD_LEN], sent[CELL_PAYLOAD_LEN];
  for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
    circ_t c;
    circ_init(&c, NULL);
    /* Forward to hop 3. */
    random_cell(sent, 2);
    memcpy(cell, sent, sizeof(cell));
    relay_crypto_origin_encrypt(c.origin, 2, cell);
    cell[where[w]] ^= 0x08;
    ck_assert_int_eq(relay_crypto_decrypt_forward(c.relay[0], cell), 0);
    ck_assert_int_eq(relay_crypto_decrypt_forward(c.relay[1], cell), 0);
    ck_assert_int_eq(relay_crypto_decrypt_forward(c.relay[2], cell), 0);
    /* Backward from hop 2. */
    random_cell(sent, 2);
    memcpy(cell, sent, sizeof(cell));
    relay_crypto_originate_backward(c.relay[1], cell);
    relay_crypto_encrypt_backward(c.relay[0], cell);
    cell[where[w]] ^= 0x08;
    ck_assert_int_eq(relay_crypto_origin_decrypt(c.origin, 3, cell), -1);
    circ_clear(&c);
  }
}
END_TEST

Suite *
suite_relay_crypto(void)
{
  Suite *s = suite_create("relay_crypto");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, test_known_answer);
  tcase_add_test(tc, test_roundtrip_three_hops);
  tcase_add_test(tc, test_swapped_sender_matches_origin);
  tcase_add_test(tc, test_unrecognized_leaves_digest);
  tcase_add_test(tc, test_corrupted_not_recognized);
  suite_add_tcase(s, tc);
  return s;
}
