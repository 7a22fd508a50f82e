-- The second default rule set (docs/classification.md): broader keyword
-- lists for the fourteen rules of 005, new rules for energy and commodities,
-- world news, science and education, and the per-rule min_keywords
-- threshold. Measured with `classifier eval` on
-- classifier/testdata/eval/labels.ndjson.
--
-- min_keywords: when above zero (and the engine scores with min_keywords,
-- its default), a rule matches when it finds at least that many distinct
-- keywords, however long its list; min_confidence (the spec's threshold on
-- 0.5*min(1, log1p(hits)/2.5) + 0.5*hits/keywords) still applies to rules
-- with min_keywords 0 and to engines run with CLASSIFIER_RULE_SCORING=spec.
-- The min_confidence values below keep the spec's scoring usable: about two
-- distinct keywords of a 40-60 keyword list.
--
-- Operators' edits are kept. classification_rules_seed records the content
-- each default rule set shipped with. A rule of 005 is upgraded only when it
-- still has exactly 005's content (name, topic, keywords, min_confidence,
-- priority, enabled); one an operator edited, disabled or renamed is left as
-- it is, and one an operator deleted is not brought back. New rules are
-- inserted only under names not taken. Upgraded and inserted rows carry
-- seed = '007_default_rules'. The down migration reverts the upgraded rows
-- that still have 007's content to 005's, hands edited ones back to 005's
-- seed, and deletes the rows 007 inserted.

ALTER TABLE classification_rules ADD COLUMN IF NOT EXISTS min_keywords INTEGER NOT NULL DEFAULT 0;
ALTER TABLE classification_rules DROP CONSTRAINT IF EXISTS classification_rules_min_keywords_check;
ALTER TABLE classification_rules ADD CONSTRAINT classification_rules_min_keywords_check
    CHECK (min_keywords >= 0 AND min_keywords <= 500);

CREATE TABLE IF NOT EXISTS classification_rules_seed (
    seed           VARCHAR(64)      NOT NULL,
    name           VARCHAR(100)     NOT NULL,
    topic          VARCHAR(64)      NOT NULL,
    keywords       TEXT[]           NOT NULL,
    min_confidence DOUBLE PRECISION NOT NULL,
    priority       INTEGER          NOT NULL,
    min_keywords   INTEGER          NOT NULL DEFAULT 0,
    PRIMARY KEY (seed, name)
);

INSERT INTO classification_rules_seed (seed, name, topic, keywords, min_confidence, priority, min_keywords) VALUES
('005_default_rules', 'Violent crime', 'violent_crime', ARRAY[
    'murder', 'murdered', 'homicide', 'manslaughter', 'attempted murder', 'shooting', 'shot dead',
    'fatally shot', 'gunman', 'gunfire', 'shots fired', 'stabbing', 'stabbed', 'assault',
    'aggravated assault', 'sexual assault', 'assaulted', 'kidnapping', 'abducted', 'hostage', 'robbery',
    'armed robbery', 'carjacking', 'domestic violence', 'slain', 'violent attack', 'killed'
], 0.25, 100, 0),
('005_default_rules', 'Organized crime', 'organized_crime', ARRAY[
    'organized crime', 'organised crime', 'gang', 'gangs', 'gang related', 'gang member', 'street gang',
    'biker gang', 'hells angels', 'cartel', 'mafia', 'mob boss', 'crime family',
    'criminal organization', 'criminal network', 'money laundering', 'racketeering', 'extortion',
    'human trafficking', 'smuggling ring', 'gun smuggling', 'illegal firearms', 'targeted shooting',
    'loan sharking', 'underworld'
], 0.25, 95, 0),
('005_default_rules', 'Drug crime', 'drug_crime', ARRAY[
    'drug trafficking', 'drug traffickers', 'trafficking', 'drug dealer', 'drug dealing', 'drug bust',
    'drug charges', 'drug seizure', 'seized drugs', 'narcotics', 'fentanyl', 'cocaine', 'crack cocaine',
    'heroin', 'methamphetamine', 'crystal meth', 'opioids', 'controlled substance',
    'possession for the purpose of trafficking', 'street value', 'drug lab', 'grow op',
    'illegal cannabis', 'drug smuggling', 'carfentanil'
], 0.25, 90, 0),
('005_default_rules', 'Property crime', 'property_crime', ARRAY[
    'burglary', 'burglaries', 'burglar', 'break and enter', 'break-in', 'broke into', 'theft', 'thefts',
    'stolen', 'stole', 'shoplifting', 'shoplifter', 'vandalism', 'vandalized', 'vandalised', 'arson',
    'arsonist', 'auto theft', 'car theft', 'stolen vehicle', 'catalytic converter', 'mischief',
    'trespassing', 'looting', 'pickpocket', 'stolen property', 'property damage', 'graffiti'
], 0.25, 85, 0),
('005_default_rules', 'Criminal justice', 'criminal_justice', ARRAY[
    'arrested', 'arrest', 'charged', 'charges laid', 'court', 'courtroom', 'judge', 'jury', 'trial',
    'sentenced', 'sentencing', 'convicted', 'conviction', 'pleaded guilty', 'found guilty',
    'not guilty', 'acquitted', 'prosecutor', 'crown attorney', 'crown prosecutor', 'defence lawyer',
    'defense attorney', 'bail hearing', 'bail', 'parole', 'prison', 'jail', 'inmate', 'warrant',
    'preliminary hearing'
], 0.3, 80, 0),
('005_default_rules', 'Politics', 'politics', ARRAY[
    'election', 'elections', 'campaign', 'candidate', 'candidates', 'ballot', 'voters', 'polls',
    'parliament', 'legislature', 'senate', 'congress', 'prime minister', 'premier', 'president',
    'minister', 'cabinet', 'opposition', 'legislation', 'political party', 'member of parliament',
    'mpp', 'question period', 'referendum', 'liberals', 'conservatives', 'ndp', 'democrats',
    'republicans', 'house of commons'
], 0.3, 50, 0),
('005_default_rules', 'Business', 'business', ARRAY[
    'economy', 'economic', 'inflation', 'interest rates', 'interest rate', 'bank of canada',
    'federal reserve', 'stock market', 'stocks', 'shares', 'investors', 'earnings', 'revenue', 'profit',
    'quarterly results', 'merger', 'acquisition', 'layoffs', 'unemployment', 'jobs report', 'gdp',
    'recession', 'ceo', 'retail sales', 'housing market', 'mortgage rates', 'tsx', 'dow jones',
    'nasdaq', 'tariffs'
], 0.3, 45, 0),
('005_default_rules', 'Health', 'health', ARRAY[
    'hospital', 'hospitals', 'emergency room', 'patients', 'doctors', 'nurses', 'public health',
    'health care', 'healthcare', 'vaccine', 'vaccination', 'covid 19', 'influenza', 'flu season',
    'outbreak', 'virus', 'disease', 'cancer', 'mental health', 'medical officer of health',
    'health unit', 'pharmacy', 'prescription', 'surgery', 'wait times', 'clinic', 'diagnosis',
    'symptoms', 'opioid crisis'
], 0.3, 45, 0),
('005_default_rules', 'Technology', 'technology', ARRAY[
    'technology', 'tech', 'artificial intelligence', 'ai', 'software', 'app', 'smartphone', 'internet',
    'cybersecurity', 'cyberattack', 'data breach', 'hackers', 'ransomware', 'social media',
    'semiconductor', 'chips', 'microsoft', 'google', 'apple', 'cloud computing', 'algorithm',
    'robotics', 'electric vehicles', 'broadband', '5g', 'computer', 'startup', 'chatbot'
], 0.3, 40, 0),
('005_default_rules', 'Traffic', 'traffic', ARRAY[
    'traffic', 'collision', 'crash', 'car crash', 'highway', 'motorist', 'motorists', 'driver',
    'pedestrian', 'cyclist', 'road closure', 'road closed', 'lane closure', 'detour', 'intersection',
    'rollover', 'multi vehicle', 'fatal collision', 'impaired driving', 'speeding', 'traffic delays',
    'congestion', 'construction zone', 'tow truck', 'head on collision', 'transit', 'vehicles'
], 0.25, 40, 0),
('005_default_rules', 'Weather', 'weather', ARRAY[
    'weather', 'forecast', 'environment canada', 'weather warning', 'special weather statement',
    'snowfall', 'snowstorm', 'blizzard', 'freezing rain', 'thunderstorm', 'tornado', 'hurricane',
    'heat warning', 'heat wave', 'extreme cold', 'wind chill', 'temperatures', 'rainfall', 'flooding',
    'flood warning', 'hail', 'fog', 'humidex', 'frost', 'drought', 'wildfire smoke', 'meteorologist',
    'centimetres of snow', 'gusts'
], 0.25, 40, 0),
('005_default_rules', 'Local news', 'local_news', ARRAY[
    'city council', 'councillor', 'council meeting', 'mayor', 'municipal', 'township', 'residents',
    'neighbourhood', 'neighborhood', 'community centre', 'community center', 'downtown', 'town hall',
    'city hall', 'school board', 'local business', 'bylaw', 'zoning', 'public library',
    'fire department', 'firefighters', 'property taxes', 'ward', 'county', 'recreation centre',
    'community'
], 0.3, 35, 0),
('005_default_rules', 'Sports', 'sports', ARRAY[
    'hockey', 'nhl', 'ohl', 'football', 'nfl', 'cfl', 'soccer', 'basketball', 'nba', 'baseball', 'mlb',
    'playoffs', 'tournament', 'championship', 'stanley cup', 'grey cup', 'world cup', 'olympics',
    'goaltender', 'goalie', 'quarterback', 'head coach', 'overtime', 'hat trick', 'power play',
    'touchdown', 'home run', 'athletes', 'season opener', 'scored'
], 0.25, 30, 0),
('005_default_rules', 'Entertainment', 'entertainment', ARRAY[
    'movie', 'film', 'box office', 'actor', 'actress', 'director', 'celebrity', 'concert', 'album',
    'singer', 'band', 'music festival', 'theatre', 'theater', 'broadway', 'netflix', 'streaming',
    'tv series', 'premiere', 'oscars', 'grammys', 'award show', 'red carpet', 'hollywood', 'comedian',
    'art gallery', 'exhibition', 'bestseller'
], 0.3, 25, 0),
('007_default_rules', 'Violent crime', 'violent_crime', ARRAY[
    'murder', 'murdered', 'homicide', 'manslaughter', 'attempted murder', 'shooting', 'shot dead',
    'fatally shot', 'gunman', 'gunfire', 'shots fired', 'shooter', 'gunshot wounds', 'stray bullet',
    'stabbing', 'stabbed', 'knife', 'assault', 'aggravated assault', 'sexual assault',
    'sexually assaulted', 'assaulted', 'attacker', 'punched', 'kidnapping', 'abducted', 'hostage',
    'standoff', 'barricaded', 'robbery', 'armed robbery', 'carjacking', 'domestic violence', 'slain',
    'violent attack', 'killed', 'killing', 'manhunt', 'wounded', 'opened fire', 'suspicious death',
    'major crimes unit', 'homicide unit', 'beaten'
], 0.25, 100, 2),
('007_default_rules', 'Organized crime', 'organized_crime', ARRAY[
    'organized crime', 'organised crime', 'gang', 'gangs', 'gang related', 'gang member', 'street gang',
    'biker gang', 'rival gangs', 'gang war', 'hells angels', 'clubhouse', 'cartel', 'cartels', 'mafia',
    'mob boss', 'crime family', 'crime boss', 'criminal organization', 'criminal network',
    'criminal networks', 'money laundering', 'laundered', 'racketeering', 'extortion', 'extorting',
    'rackets', 'protection racket', 'human trafficking', 'smuggling ring', 'trafficking ring',
    'smuggling networks', 'gun smuggling', 'illegal firearms', 'targeted shooting', 'loan sharking',
    'underworld', 'stash houses', 'syndicate', 'crime syndicate', 'illegal gambling',
    'outlaw motorcycle', 'motorcycle gang', 'weapons trafficking', 'turf war', 'gangland', 'smugglers'
], 0.25, 95, 2),
('007_default_rules', 'Drug crime', 'drug_crime', ARRAY[
    'drug trafficking', 'drug traffickers', 'trafficking', 'drug dealer', 'drug dealers',
    'drug dealing', 'drug bust', 'drug charges', 'drug seizure', 'seized drugs', 'narcotics',
    'fentanyl', 'cocaine', 'crack cocaine', 'heroin', 'methamphetamine', 'crystal meth', 'meth',
    'opioids', 'oxycodone', 'controlled substance', 'possession for the purpose of trafficking',
    'street value', 'drug lab', 'grow op', 'illegal cannabis', 'marijuana', 'drug smuggling',
    'carfentanil', 'counterfeit pills', 'drug ring', 'importing', 'kilograms'
], 0.25, 90, 2),
('007_default_rules', 'Property crime', 'property_crime', ARRAY[
    'burglary', 'burglaries', 'burglar', 'break and enter', 'break-in', 'broke into', 'theft', 'thefts',
    'stolen', 'stole', 'thieves', 'thief', 'shoplifting', 'shoplifters', 'retail theft', 'vandalism',
    'vandals', 'vandalized', 'vandalised', 'arson', 'arsonist', 'deliberately set', 'auto theft',
    'car theft', 'stolen vehicle', 'catalytic converter', 'mischief', 'trespassing', 'trespassers',
    'looting', 'pickpocket', 'porch pirates', 'stolen property', 'property damage', 'graffiti',
    'smashed'
], 0.25, 85, 2),
('007_default_rules', 'Criminal justice', 'criminal_justice', ARRAY[
    'arrested', 'arrest', 'charged', 'charges', 'charges laid', 'accused', 'court', 'courtroom',
    'judge', 'jury', 'jurors', 'trial', 'sentenced', 'sentencing', 'sentence', 'convicted',
    'conviction', 'wrongful conviction', 'pleaded guilty', 'found guilty', 'not guilty', 'acquitted',
    'prosecutor', 'prosecutors', 'crown attorney', 'crown prosecutor', 'defence lawyer',
    'defence lawyers', 'defense attorney', 'bail', 'bail hearing', 'parole', 'parole board', 'prison',
    'jail', 'inmate', 'inmates', 'correctional officers', 'warrant', 'arrest warrant',
    'preliminary hearing', 'court of appeal', 'supreme court', 'custody', 'testified', 'use of force'
], 0.3, 80, 2),
('007_default_rules', 'Politics', 'politics', ARRAY[
    'election', 'elections', 'byelection', 'campaign', 'candidate', 'candidates', 'ballot', 'voters',
    'vote', 'polls', 'parliament', 'legislature', 'senate', 'senator', 'congress', 'lawmakers',
    'prime minister', 'premier', 'president', 'cabinet', 'cabinet minister', 'finance minister',
    'opposition', 'legislation', 'political party', 'party leader', 'leadership race',
    'member of parliament', 'mps', 'mpp', 'question period', 'referendum', 'liberals', 'conservatives',
    'ndp', 'democrats', 'republicans', 'house of commons', 'confidence vote', 'minority government',
    'veto', 'shadow cabinet', 'ethics', 'tabled', 'justice minister', 'leadership convention',
    'televised debate', 'public inquiry', 'lobbying', 'lobbyists', 'committee'
], 0.3, 50, 2),
('007_default_rules', 'Business', 'business', ARRAY[
    'economy', 'economic', 'economists', 'inflation', 'interest rates', 'interest rate', 'central bank',
    'bank of canada', 'federal reserve', 'stock market', 'stocks', 'stock', 'shares', 'shareholders',
    'investors', 'analysts', 'earnings', 'revenue', 'profit', 'profits', 'quarterly',
    'quarterly results', 'merger', 'merge', 'acquisition', 'acquire', 'acquirer', 'takeover', 'buyout',
    'private equity', 'venture capital', 'deal valued', 'dividend', 'share buyback', 'layoffs',
    'cut jobs', 'unemployment', 'jobs report', 'labour force survey', 'gdp', 'gross domestic product',
    'recession', 'ceo', 'chief executive', 'retail sales', 'housing market', 'housing starts',
    'mortgage rates', 'tsx', 'dow jones', 'nasdaq', 's&p 500', 'wall street', 'tariffs', 'trade',
    'exports', 'company', 'companies', 'bailout', 'bankruptcy', 'sales', 'markets',
    'tentative agreement', 'employers', 'deal', 'agreed to buy', 'retailer', 'retail'
], 0.3, 45, 2),
('007_default_rules', 'Health', 'health', ARRAY[
    'hospital', 'hospitals', 'emergency room', 'emergency department', 'patients', 'doctors',
    'family doctor', 'nurses', 'public health', 'health officials', 'health care', 'healthcare',
    'vaccine', 'vaccines', 'vaccination', 'vaccinated', 'covid 19', 'influenza', 'flu', 'flu season',
    'measles', 'outbreak', 'virus', 'disease', 'heart disease', 'cancer', 'mental health',
    'medical officer of health', 'health unit', 'pharmacy', 'pharmacies', 'pharmacist', 'pharmacists',
    'prescription', 'prescribe', 'medication', 'surgery', 'surgeries', 'wait times', 'clinic',
    'clinics', 'diagnosis', 'symptoms', 'opioid crisis', 'overdose deaths', 'naloxone',
    'long term care', 'clinical trial', 'clinical trials', 'health regulator', 'drug approval',
    'screening', 'treatment', 'medical journal', 'alzheimer s', 'obesity', 'anxiety', 'depression'
], 0.3, 45, 2),
('007_default_rules', 'Technology', 'technology', ARRAY[
    'technology', 'tech', 'artificial intelligence', 'ai', 'software', 'software update', 'app', 'apps',
    'smartphone', 'phone', 'phones', 'internet', 'high speed internet', 'cybersecurity', 'cyberattack',
    'data breach', 'hackers', 'ransomware', 'phishing', 'security flaw', 'social media',
    'semiconductor', 'chipmaker', 'chips', 'microsoft', 'google', 'apple', 'cloud', 'cloud computing',
    'algorithm', 'robots', 'robotics', 'electric vehicles', 'broadband', '5g', 'computer', 'computers',
    'computing', 'quantum computing', 'supercomputer', 'startup', 'chatbot', 'chatbots', 'router',
    'routers', 'devices', 'smart glasses', 'touchscreen', 'developers', 'online banking',
    'cryptocurrency', 'encryption', 'messaging app', 'data centres', 'online'
], 0.3, 40, 2),
('007_default_rules', 'Traffic', 'traffic', ARRAY[
    'traffic', 'collision', 'crash', 'car crash', 'highway', 'highways', 'motorist', 'motorists',
    'driver', 'drivers', 'pedestrian', 'cyclist', 'road closure', 'road closed', 'lane closure',
    'lane closures', 'lanes', 'detour', 'intersection', 'rollover', 'rolled over', 'multi vehicle',
    'tractor trailer', 'fatal collision', 'impaired driving', 'distracted driving', 'speeding',
    'speeding tickets', 'photo radar', 'traffic delays', 'delays', 'congestion', 'road construction',
    'construction zone', 'tow truck', 'tow trucks', 'head on collision', 'transit', 'commuters',
    'motorcycle', 'motorcyclist', 'bike lanes', 'roundabout', 'centre line', 'hit and run',
    'traffic stop', 'speed limits'
], 0.25, 40, 2),
('007_default_rules', 'Weather', 'weather', ARRAY[
    'weather', 'forecast', 'forecasters', 'environment canada', 'weather warning',
    'special weather statement', 'winter storm', 'snow', 'snowfall', 'snowstorm', 'blizzard',
    'freezing rain', 'thunderstorm', 'severe thunderstorms', 'tornado', 'hurricane', 'storm surge',
    'landfall', 'heat warning', 'heat wave', 'extreme cold', 'extreme cold warning', 'wind chill',
    'temperatures', 'degrees', 'rainfall', 'heavy rain', 'torrential rain', 'flooding', 'flood warning',
    'hail', 'fog', 'fog advisory', 'visibility', 'humidex', 'frost', 'drought', 'wildfire smoke',
    'air quality', 'meteorologist', 'meteorologists', 'centimetres of snow', 'gusts', 'wind gusts',
    'sunshine', 'cold snap', 'power outages', 'driest', 'storm', 'high winds', 'strong winds',
    'ice storm', 'dry spell', 'wildfire', 'fire ban', 'heavy snow', 'rain', 'downpour', 'flash floods',
    'floods', 'millimetres of rain', 'lightning'
], 0.25, 40, 2),
('007_default_rules', 'Local news', 'local_news', ARRAY[
    'city council', 'town council', 'councillor', 'councillors', 'council meeting', 'mayor',
    'municipal', 'municipality', 'township', 'residents', 'neighbourhood', 'neighborhood',
    'community centre', 'community center', 'downtown', 'town hall', 'city hall', 'school board',
    'local business', 'local businesses', 'bylaw', 'zoning', 'rezoning', 'public library',
    'library board', 'fire department', 'fire chief', 'property taxes', 'property tax', 'ward',
    'county', 'county council', 'recreation centre', 'city crews', 'city staff', 'staff report',
    'farmers market', 'water main', 'city s', 'council approved', 'council voted', 'park', 'neighbours',
    'neighbors', 'playground'
], 0.3, 35, 2),
('007_default_rules', 'Sports', 'sports', ARRAY[
    'hockey', 'nhl', 'ohl', 'football', 'nfl', 'cfl', 'soccer', 'basketball', 'nba', 'baseball', 'mlb',
    'playoffs', 'playoff', 'tournament', 'championship', 'stanley cup', 'grey cup', 'world cup',
    'cup final', 'olympics', 'olympic', 'goaltender', 'goalie', 'quarterback', 'head coach', 'coach',
    'overtime', 'hat trick', 'power play', 'touchdown', 'home run', 'home runs', 'athletes', 'athlete',
    'scored', 'goal', 'goals', 'regular season', 'season opener', 'game', 'games', 'team', 'league',
    'draft pick', 'draft', 'trade deadline', 'tennis', 'golf', 'golfer', 'marathon', 'runners',
    'swimmer', 'shutout', 'saves', 'striker', 'fans', 'innings', 'pitcher', 'first baseman',
    'outfielder', 'all star', 'winning streak', 'straight game', 'major championship', 'us open',
    'straight sets', 'shootout', 'rookie', 'boxing', 'boxer', 'champion', 'curling', 'skier', 'leafs',
    'canadiens', 'senators', 'oilers', 'flames', 'canucks', 'jets', 'raptors', 'blue jays', 'argonauts',
    'alouettes'
], 0.25, 30, 2),
('007_default_rules', 'Entertainment', 'entertainment', ARRAY[
    'movie', 'movies', 'film', 'films', 'box office', 'actor', 'actors', 'actress', 'director',
    'celebrity', 'concert', 'concerts', 'album', 'singer', 'band', 'music', 'music festival',
    'film festival', 'festival', 'theatre', 'theater', 'broadway', 'netflix', 'streaming', 'tv series',
    'streaming service', 'premiere', 'oscars', 'oscar', 'grammys', 'award show', 'red carpet',
    'hollywood', 'comedian', 'comedians', 'comedy', 'art gallery', 'gallery', 'exhibition', 'artists',
    'paintings', 'bestseller', 'novel', 'novelist', 'author', 'literary', 'podcast', 'musical',
    'world tour', 'charts', 'stand up', 'screening', 'sequel', 'superhero', 'quiz show', 'tv host',
    'divorce', 'romantic comedy', 'dinner theatre', 'television', 'fashion', 'photographer', 'magazine',
    'sitcom', 'episode', 'documentary', 'opera', 'composer', 'nominations', 'best picture',
    'giller prize'
], 0.3, 25, 2),
('007_default_rules', 'Energy and commodities', 'energy', ARRAY[
    'energy', 'oil', 'crude', 'crude oil', 'oil prices', 'oil futures', 'barrel', 'barrels', 'brent',
    'west texas intermediate', 'opec', 'natural gas', 'gas prices', 'gasoline', 'diesel', 'fuel',
    'refinery', 'refineries', 'pipeline', 'petroleum', 'strategic petroleum reserve', 'lng',
    'liquefied natural gas', 'oil and gas', 'oil producer', 'producers', 'shale', 'drilling',
    'electricity', 'power grid', 'grid operator', 'nuclear', 'reactors', 'solar', 'wind farms',
    'turbines', 'renewable', 'coal', 'power plant', 'power generation', 'battery storage',
    'commodities', 'copper prices', 'gold prices', 'metal exchange', 'mining', 'futures', 'inventories',
    'energy department', 'energy information administration', 'tanker', 'blackouts', 'hydroelectric',
    'hydro', 'dam'
], 0.25, 45, 2),
('007_default_rules', 'World news', 'world', ARRAY[
    'united nations', 'un', 'un security council', 'un refugee agency', 'ceasefire', 'peace talks',
    'war', 'airstrikes', 'truce', 'front line', 'troops', 'military', 'rebel', 'rebels', 'refugees',
    'migrants', 'humanitarian', 'humanitarian aid', 'humanitarian crisis', 'red cross', 'embassy',
    'ambassador', 'diplomat', 'diplomats', 'diplomatic', 'foreign minister', 'foreign ministers',
    'nato', 'summit', 'g7', 'g20', 'european union', 'african union', 'sanctions', 'coup', 'civilians',
    'earthquake', 'china', 'russia', 'ukraine', 'israel', 'gaza', 'iran', 'brazil', 'mexico', 'india',
    'europe', 'beijing', 'kyiv', 'moscow', 'indonesia', 'indonesian', 'japan', 'syria', 'sudan',
    'afghanistan', 'haiti', 'venezuela', 'north korea', 'middle east', 'volcano', 'typhoon', 'cyclone',
    'philippines', 'security forces', 'tear gas', 'brussels', 'geneva', 'mediterranean', 'crackdown',
    'international organization for migration'
], 0.25, 40, 2),
('007_default_rules', 'Science', 'science', ARRAY[
    'science', 'scientists', 'scientific', 'researchers', 'research', 'study', 'published', 'journal',
    'nature', 'astronomers', 'astronomy', 'telescope', 'space telescope', 'nasa', 'space', 'spacecraft',
    'planet', 'planets', 'star', 'asteroid', 'meteor', 'meteor shower', 'comet', 'galaxy', 'black hole',
    'solar eclipse', 'eclipse', 'species', 'fossil', 'fossils', 'dinosaur', 'physicists', 'physics',
    'particles', 'biologists', 'geneticists', 'archaeologists', 'dna', 'ancient dna', 'climate change',
    'climate scientists', 'sea ice', 'ocean current', 'stem cells', 'neurons', 'brain', 'laboratory',
    'lab', 'extinct', 'wildlife', 'invasive species', 'atmosphere', 'genome', 'moon', 'lunar', 'lander',
    'microplastics', 'permafrost'
], 0.25, 40, 2),
('007_default_rules', 'Education', 'education', ARRAY[
    'education', 'school', 'schools', 'students', 'student', 'teachers', 'teacher', 'university',
    'universities', 'college', 'colleges', 'tuition', 'curriculum', 'classroom', 'classrooms',
    'school board', 'school boards', 'principal', 'kindergarten', 'graduation', 'graduates',
    'enrolment', 'enrollment', 'campus', 'student loans', 'elementary', 'elementary school',
    'high school', 'study permits', 'professor', 'professors', 'faculty', 'class sizes',
    'education ministry', 'education minister', 'portable classrooms', 'french immersion',
    'science fair', 'education assistants', 'test scores'
], 0.3, 35, 2)
ON CONFLICT (seed, name) DO NOTHING;

-- Upgrade the 005 rules nobody changed.
UPDATE classification_rules r
   SET keywords = n.keywords, min_confidence = n.min_confidence, priority = n.priority,
       min_keywords = n.min_keywords, seed = n.seed
  FROM classification_rules_seed o
  JOIN classification_rules_seed n ON n.seed = '007_default_rules' AND n.name = o.name
 WHERE o.seed = '005_default_rules'
   AND r.name = o.name AND r.seed = o.seed AND r.topic = o.topic AND r.topic = n.topic
   AND r.keywords = o.keywords AND r.min_confidence = o.min_confidence AND r.priority = o.priority
   AND r.enabled AND r.min_keywords = 0;

-- Add the new rules under names nobody has taken (and that 005 did not ship:
-- a default rule an operator deleted stays deleted).
INSERT INTO classification_rules (name, topic, keywords, min_confidence, priority, min_keywords, enabled, seed)
SELECT n.name, n.topic, n.keywords, n.min_confidence, n.priority, n.min_keywords, TRUE, n.seed
  FROM classification_rules_seed n
 WHERE n.seed = '007_default_rules'
   AND NOT EXISTS (SELECT 1 FROM classification_rules_seed o WHERE o.seed = '005_default_rules' AND o.name = n.name)
 ORDER BY n.priority DESC, n.name
ON CONFLICT (name) DO NOTHING;
