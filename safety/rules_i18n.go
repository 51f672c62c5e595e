package safety

// The imperatives in other languages than English: Spanish, German, Japanese, French, Russian,
// Portuguese, Italian, Dutch, Polish, Turkish and Chinese (simplified and traditional), which with
// English are the twelve languages most used on the web after W3Techs' survey, Persian aside.
// Each rule of imperativeRules gets the same kinds of sentence in each of them: setting the
// instructions aside, hiding something from the user, ordering the tool calls, the system prompt,
// a note addressed to the model, reading or sending secrets. Patterns are written in each
// language's spelling; pat folds them as the text is folded (accents and marks dropped, look-alike
// letters to ASCII), which is also why patterns for Cyrillic and CJK text use no \b: RE2's word
// boundary is ASCII's.

// Words the languages share in these patterns.
const (
	// Latin-script verbs for reading or sending, imperative or infinitive.
	takeVerbI18n = `\b(?:lee|leer|lea|envia|enviar|envíe|adjunta|adjuntar|incluye|incluir|lis|lisez|lire|envoie|envoyez|envoyer|joins|joignez|inclus|incluez|lies|lese|lesen|sende|senden|schick|schicke|schicken|hänge|füge|leia|ler|envie|inclua|anexe|leggi|leggere|invia|inviare|allega|includi|lees|stuur|verstuur|voeg|czytaj|przeczytaj|wyślij|dołącz|oku|gönder|ekle)\b`
	// The same in scripts without ASCII word boundaries.
	takeVerbCJK = `(?:прочитай|прочитайте|прочти|отправь|отправьте|пришли|приложи|读取|读|讀取|發送|发送|附上|読み取|読んで|読み込|送信|送って|添付)`
)

var i18nRules = map[string][]pattern{
	"tells the model to disregard its instructions": {
		// es
		pat(`\b(?:ignora|ignore|ignoren|ignorar|olvida|olvide|olviden|olvidar|omite|omita|descarta|descarte) (?:todas (?:las |tus |sus )?(?:instrucciones|indicaciones|reglas|órdenes|directrices|normas)|(?:las |tus |sus )?(?:instrucciones|indicaciones|reglas|órdenes|directrices|normas) (?:anteriores|previas|precedentes|originales|del sistema|de seguridad|de arriba))`,
			anyOf("ignor", "olvid", "omit", "descart")),
		// pt
		pat(`\b(?:ignore|ignora|ignorar|esqueça|esquece|esquecer|desconsidere|desconsidera) (?:todas (?:as |suas |tuas )?(?:instruções|orientações|regras|diretrizes|ordens)|(?:as |suas |tuas )?(?:instruções|orientações|regras|diretrizes|ordens) (?:anteriores|prévias|precedentes|originais|do sistema|de segurança|acima))`,
			anyOf("ignor", "esque", "desconsider")),
		// fr
		pat(`\b(?:ignore|ignorez|ignorer|oublie|oubliez|oublier|néglige|négligez|ne tiens pas compte|ne tenez pas compte) (?:de |des )?(?:toutes (?:les |tes |vos )?(?:instructions|consignes|règles|directives|ordres)|(?:les |tes |vos |des )?(?:instructions|consignes|règles|directives|ordres) (?:précédentes|antérieures|ci-dessus|du système|de sécurité|initiales|originales))`,
			anyOf("ignor", "oubli", "néglig", "ne tiens", "ne tenez")),
		// de
		pat(`\b(?:ignoriere|ignorieren|ignoriert|vergiss|vergesst|vergessen|missachte|missachten) (?:sie )?(?:alle |sämtliche )?(?:die |deine |ihre |der )?(?:(?:vorherigen|bisherigen|vorigen|obigen|früheren|vorangegangenen|ursprünglichen) )?(?:anweisungen|instruktionen|regeln|vorgaben|befehle|richtlinien|systemanweisungen)\b`,
			anyOf("ignorier", "vergiss", "vergesst", "vergessen", "missacht"), anyOf("alle", "sämtliche", "vorherig", "bisherig", "vorig", "obig", "früher", "vorangegangen", "ursprünglich", "systemanweisung")),
		pat(`\b(?:alle |die )?(?:vorherigen|bisherigen|obigen|früheren|ursprünglichen) (?:anweisungen|instruktionen|regeln|befehle|vorgaben) (?:ignorieren|vergessen|missachten)\b`,
			anyOf("vorherig", "bisherig", "obig", "früher", "ursprünglich")),
		// it
		pat(`\b(?:ignora|ignori|ignorate|ignorare|dimentica|dimentichi|dimenticate|dimenticare|trascura|trascurate) (?:tutte (?:le |tue |sue )?(?:istruzioni|indicazioni|regole|direttive)|(?:le |tue |sue )?(?:istruzioni|indicazioni|regole|direttive) (?:precedenti|anteriori|originali|di sistema|del sistema|di sicurezza|sopra))`,
			anyOf("ignor", "dimentic", "trascur")),
		// nl
		pat(`\b(?:negeer|negeren|vergeet|vergeten) (?:alle (?:de |je |jouw |uw )?(?:(?:vorige|eerdere|voorgaande|bovenstaande|oorspronkelijke) )?|(?:de |je |jouw |uw )?(?:vorige|eerdere|voorgaande|bovenstaande|oorspronkelijke|systeem) )(?:instructies|regels|opdrachten|richtlijnen)\b`,
			anyOf("negeer", "negeren", "vergeet", "vergeten")),
		// pl
		pat(`\b(?:zignoruj|zignorujcie|ignoruj|zapomnij|zapomnijcie|pomiń) (?:wszystkie (?:(?:poprzednie|wcześniejsze|powyższe|systemowe|dotychczasowe) )?|(?:poprzednie|wcześniejsze|powyższe|systemowe|dotychczasowe) )(?:instrukcje|polecenia|zasady|reguły)\b`,
			anyOf("zignoruj", "ignoruj", "zapomnij", "pomiń")),
		// tr
		pat(`\b(?:tüm |bütün )?(?:önceki|yukarıdaki|sistem|eski) (?:talimatları|talimatlar|kuralları|komutları|yönergeleri) (?:yok ?say|görmezden gel|unut|dikkate alma)`,
			anyOf("talimat", "kural", "komut", "yönerge")),
		// ru
		pat(`(?:игнорируй|игнорируйте|проигнорируй|проигнорируйте|забудь|забудьте|не обращай внимания на|не обращайте внимания на|отбрось|отбросьте) (?:все (?:(?:предыдущие|прежние|предшествующие|вышеуказанные|системные|исходные) )?|(?:предыдущие|прежние|предшествующие|вышеуказанные|системные|исходные) )(?:инструкции|указания|правила|команды)`,
			anyOf("игнор", "проигнор", "забуд", "не обраща", "отброс")),
		// zh
		pat(`(?:忽略|无视|無視|忘记|忘記|忘掉|不要理会|不要理會|跳过|跳過|不理会|不理會)(?:之前|以前|先前|上述|上面|前面|所有|全部|一切|此前|原有|原来|原來)(?:的)?(?:所有|全部|一切)?(?:的)?(?:指令|指示|说明|說明|规则|規則|提示|命令|要求)`,
			anyOf("忽略", "无视", "無視", "忘记", "忘記", "忘掉", "理会", "理會", "跳过", "跳過")),
		// ja
		pat(`(?:以前|前|これまで|上記|先|今まで|すべて|全て|元)の(?:すべての|全ての)?(?:指示|命令|指令|ルール|プロンプト|規則)を(?:無視|忘れ|むし)`,
			anyOf("無視", "忘れ", "むし")),
		pat(`(?:指示|命令|指令|ルール)を(?:すべて|全て)?(?:無視|忘れ)(?:して|しろ|せよ|してください)`, anyOf("無視", "忘れ")),
	},
	"asks the model to hide something from the user": {
		pat(`\bno (?:se lo |le |lo |les )?(?:digas|diga|digan|menciones|mencione|informes|informe|reveles|revele|cuentes|cuente|muestres|muestre|comuniques|comunique|avises|avise)(?: nada| esto| eso)? (?:al|a los) usuarios?\b`,
			anyOf("usuario")),
		pat(`\bsin que (?:el|los) usuarios? (?:lo )?(?:sepa|sepan|note|noten|se entere|se enteren|vea|vean)\b`, anyOf("usuario")),
		pat(`\b(?:ocúltale|oculta|ocultar|esconde|escóndele) (?:esto|eso|lo|la|el [a-z]+) (?:al|del) usuario\b`, anyOf("usuario")),
		pat(`\bnão (?:lhe )?(?:diga|conte|mencione|informe|revele|mostre|fale|avise)(?: isso| nada| isto)? (?:ao|para o|aos) (?:usuário|utilizador)(?:es|s)?\b`,
			anyOf("usuário", "utilizador")),
		pat(`\bsem que o (?:usuário|utilizador) (?:o )?(?:saiba|perceba|note|veja)\b`, anyOf("usuário", "utilizador")),
		pat(`\b(?:ne |n')(?:le |lui |en |rien )?(?:dis|dites|mentionne|mentionnez|révèle|révélez|signale|signalez|montre|montrez|informe|informez|préviens|prévenez|parle|parlez)(?: pas| rien| jamais)(?: (?:ceci|cela|ça|rien))? (?:à |a )?l'utilisat(?:eur|rice)`,
			anyOf("utilisateur", "utilisatrice")),
		pat(`\bsans que l'utilisat(?:eur|rice) (?:ne )?(?:le )?(?:sache|remarque|s'en aperçoive|voie|soit au courant)`, anyOf("utilisateur", "utilisatrice")),
		pat(`\b(?:cache|cachez|dissimule|dissimulez) (?:ceci|cela|ça|le|la|les|tout) (?:à |a )l'utilisat(?:eur|rice)`, anyOf("utilisateur", "utilisatrice")),
		pat(`\b(?:sag|sage|sagt|sagen|erwähne|erwähnt|erwähnen|verrate|verratet|verraten|teile|teilt|teilen|zeige|zeigt|zeigen)(?: sie| es| das| dies| davon){0,3} (?:dem|den) (?:benutzer|nutzer|anwender|user)n? (?:nichts|nicht)\b`,
			anyOf("benutzer", "nutzer", "anwender", "user")),
		pat(`\b(?:dem|den) (?:benutzer|nutzer|anwender)n? (?:gegenüber )?(?:nichts|nicht) (?:davon )?(?:sagen|erwähnen|verraten|mitteilen|zeigen)\b`, anyOf("benutzer", "nutzer", "anwender")),
		pat(`\bohne dass (?:der|die) (?:benutzer|nutzer|anwender)(?:in)? (?:es |davon |etwas )?(?:weiß|merkt|erfährt|bemerkt|sieht|mitbekommt)\b`, anyOf("benutzer", "nutzer", "anwender")),
		pat(`\bnon (?:dire|dirlo|dirgli|menzionare|menzionarlo|rivelare|rivelarlo|informare|mostrare|comunicare|segnalare)(?: nulla| niente| questo)? (?:all'|a l')utente\b`, anyOf("utente")),
		pat(`\bsenza che l'utente (?:lo )?(?:sappia|noti|veda|se ne accorga)\b`, anyOf("utente")),
		pat(`\b(?:vertel|zeg|meld|toon|laat)(?: het| dit| dat| dit)? (?:niet|niets) (?:aan|tegen) de gebruiker\b`, anyOf("gebruiker")),
		pat(`\bzonder dat de gebruiker (?:het |dit )?(?:weet|merkt|ziet)\b`, anyOf("gebruiker")),
		pat(`\bnie (?:mów|mówić|informuj|informować|wspominaj|wspominać|ujawniaj|ujawniać|pokazuj|pokazywać)(?: o tym| nic)? użytkownikowi\b`, anyOf("użytkownik")),
		pat(`\bbez wiedzy użytkownika\b`, anyOf("użytkownik")),
		pat(`\bkullanıcıya (?:bundan |bunu |hiçbir şey )?(?:söyleme|bahsetme|bildirme|gösterme|anlatma)`, anyOf("kullanıcı")),
		pat(`\bkullanıcının haberi olmadan\b`, anyOf("kullanıcı")),
		pat(`не (?:говори|говорите|сообщай|сообщайте|рассказывай|рассказывайте|показывай|показывайте|упоминай|упоминайте)(?: об этом| ничего| это)? пользовател(?:ю|ям)`, anyOf("пользовател")),
		pat(`без ведома пользовател(?:я|ей)|скрой(?:те)? (?:это |это всё )?от пользовател(?:я|ей)`, anyOf("пользовател")),
		pat(`(?:不要|别|別|切勿|勿|不得|不可)(?:告诉|告訴|通知|提醒|透露|让|讓|向)(?:给)?(?:用户|用戶|使用者)`, anyOf("用户", "用戶", "使用者")),
		pat(`(?:瞒着|瞞著|瞒住|瞞住)(?:用户|用戶|使用者)|(?:对|對|向)(?:用户|用戶|使用者)(?:隐瞒|隱瞞|保密)`, anyOf("用户", "用戶", "使用者")),
		pat(`ユーザー?(?:に|には)(?:知らせ|伝え|言わ|教え|見せ|報告し|通知し)(?:ないで|るな|ず)`, anyOf("ユーザ")),
		pat(`ユーザー?(?:に|には)(?:秘密|内緒)|ユーザー?に気づかれ(?:ない|ず)`, anyOf("ユーザ")),
	},
	"dictates the order of tool calls to the model": {
		pat(`\bantes de (?:usar|utilizar|llamar a|llamar|invocar|ejecutar|chamar|executar) (?:cualquier |ninguna |qualquer )?(?:otras?|outras?) (?:herramientas?|ferramentas?|funci[oó]n|funciones|função|funções)`, anyOf("antes de")),
		pat(`\bavant d'(?:utiliser|appeler|invoquer|exécuter) (?:tout autre|un autre|n'importe quel autre|les autres|d'autres) (?:outils?|fonctions?)`, anyOf("avant")),
		pat(`\bbevor (?:du |sie )?(?:ein |irgendein )?(?:anderes|andere|anderen) (?:tool|tools|werkzeug|werkzeuge|funktion)`, anyOf("bevor")),
		pat(`\bprima di (?:usare|utilizzare|chiamare|invocare|eseguire) (?:qualsiasi |qualunque |un |gli )?(?:altro|altri) (?:strumento|strumenti|tool|funzione|funzioni)`, anyOf("prima di")),
		pat(`\bvoordat (?:je|u) (?:een )?(?:ander|andere) (?:tool|tools|hulpmiddel|functie)`, anyOf("voordat")),
		pat(`\bprzed (?:użyciem|wywołaniem) (?:jakiegokolwiek )?innego (?:narzędzia|toola|tool)`, anyOf("przed")),
		pat(`\b(?:başka|diğer) (?:bir )?(?:araç|aracı|araçları|fonksiyon)(?:ı|u)? (?:kullanmadan|çağırmadan) önce`, anyOf("başka", "diğer")),
		pat(`перед (?:использованием|вызовом) (?:любого )?(?:другого|других) (?:инструмента|инструментов|функции|функций)`, anyOf("перед")),
		pat(`(?:在)?(?:使用|调用|調用)(?:任何)?其他(?:工具|函数|函數)之前`, anyOf("其他")),
		pat(`他の(?:ツール|関数)を(?:使う|使用する|呼び出す|呼ぶ)前に`, anyOf("他の")),
	},
	"refers to the model's system prompt or hidden instructions": {
		pat(`\b(?:prompt|instrucciones|mensaje) del sistema\b|\b(?:prompt|instruções|mensagem) do sistema\b|\b(?:prompt|instructions|message) (?:du )?système\b|\bsystem-?(?:prompt|anweisungen|nachricht)\b|\b(?:prompt|istruzioni|messaggio) di sistema\b|\bsysteem(?:prompt|instructies)\b|\b(?:prompt|instrukcje) systemow[ey]\b|\bsistem (?:istemi|komutu|talimatları)\b`,
			anyOf("sistema", "système", "systeme", "system", "systeem", "systemow", "sistem")),
		pat(`системн(?:ый|ые|ого|ую) (?:промпт|подсказк|инструкц)|系统提示|系統提示|系统指令|系統指令|システムプロンプト`, anyOf("системн", "系统", "系統", "システム")),
	},
	"speaks to the AI model directly": {
		pat(`\b(?:nota|note|hinweis|mensaje|message|anweisung|notiz|aviso|instrucciones|instructions|istruzioni|instruções|notitie|opmerking|uwaga|wskazówka) (?:para|pour|für|an|per|à|a|voor|dla|aan) (?:la |l'|die |den |a |o |het |de |el )?(?:ia|ki|ai|asistente|assistant|assistente|assistenten|asystenta|llm)\b`,
			anyOf("ia", "ki", "ai", "asistente", "assistant", "assistente", "assistenten", "asystenta", "llm")),
		pat(`\b(?:la ia|el asistente|l'ia|l'assistant|l'assistente|die ki|der assistent|a ia|o assistente|de ai|de assistent|sztuczna inteligencja|asystent) (?:debe|deben|doit|doivent|deve|devono|muss|müssen|moet|sollte|soll|musi|powinien)\b`,
			anyOf("ia", "asistente", "assistant", "assistente", "ki", "assistent", "ai", "asystent", "sztuczna")),
		pat(`(?:примечание|сообщение|указание|заметка|инструкция|инструкции) для (?:ии|ассистента|модели|ai|нейросети)|(?:ии|ассистент) (?:должен|обязан)`, anyOf("для", "должен", "обязан")),
		pat(`(?:给|給)(?:ai|人工智能|助手|模型)的(?:说明|說明|指示|提示|注意|消息|訊息)|(?:ai|助手|人工智能)(?:必须|必須|务必|務必)`, anyOf("给", "給", "必须", "必須", "务必", "務必")),
		pat(`(?:ai|アシスタント|モデル)への(?:指示|メッセージ|注意|お知らせ)|(?:ai|アシスタント)は(?:必ず|常に)`, anyOf("への", "必ず", "常に")),
	},
	"asks the model to read or send secrets": {
		pat(takeVerbI18n+`[^.!?\n]*?`+secretFile, needSecretFile),
		pat(takeVerbCJK+`[^.!?\n。]*?`+secretFile, needSecretFile),
	},
}

// i18nNeedles is every needle the first group of a translated pattern has: a text with none of
// them (most English ones) skips the translated patterns at once.
var i18nNeedles needleSet

// translated holds the translated patterns of imperativeRules[i] at i.
var translated = make([][]pattern, len(imperativeRules))

func init() {
	for i := range imperativeRules {
		r := &imperativeRules[i]
		translated[i] = i18nRules[r.name]
		for _, p := range translated[i] {
			for k := range i18nNeedles {
				i18nNeedles[k] |= p.needs[0][k]
			}
		}
		delete(i18nRules, r.name)
	}
	if len(i18nRules) > 0 {
		panic("safety: translated patterns for a rule that does not exist")
	}
}
